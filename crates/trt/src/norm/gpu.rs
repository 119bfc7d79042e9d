//! The normalization kernels on an NVIDIA GPU, through cudarc (dynamic loading: the crate builds
//! and its CPU tests run on machines without CUDA).
//!
//! The kernels (`kernels.cu`) are compiled by NVRTC once per storage type and cached for the
//! process. Nothing is launched before the layer has been validated against the input shape.

use super::{DType, Layer, NormError};
use cudarc::driver::{CudaContext, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

const SOURCE: &str = include_str!("kernels.cu");
/// Threads per block of the fused kernel; with 16 values per thread it holds 4096 elements.
const FUSED_THREADS: u32 = 256;
const FUSED_MAX: usize = 256 * 16;

/// A GPU with the kernels loaded.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    /// The stream the layers run on.
    pub stream: Arc<CudaStream>,
    modules: Mutex<HashMap<DType, Arc<CudaModule>>>,
}

fn cuda<E: std::fmt::Debug>(e: E) -> NormError {
    NormError::Cuda(format!("{e:?}"))
}

/// Elements per block in the partial-statistics pass of large groups.
const CHUNK: usize = 16 * 1024;

/// A layer validated for one input shape, with its parameters and work buffers on the device.
pub struct Prepared {
    n: usize,
    kind: PreparedKind,
}

enum PreparedKind {
    Batch {
        c: usize,
        inner: usize,
        scale: CudaSlice<f32>,
        shift: CudaSlice<f32>,
    },
    Norm {
        plan: super::Plan,
        eps: f32,
        w: CudaSlice<f32>,
        b: CudaSlice<f32>,
        part: CudaSlice<f32>,
        stats: CudaSlice<f32>,
        chunks: usize,
    },
}

/// A device buffer of the storage type's bits.
pub enum Buffer {
    /// fp32 values.
    F32(CudaSlice<f32>),
    /// fp16 or bf16 bits.
    Half(CudaSlice<u16>),
}

impl Gpu {
    /// The process's GPU 0, or why there is none. Checks for the driver and NVRTC before
    /// touching cudarc's context (cudarc panics when a library is missing).
    pub fn get() -> Result<&'static Gpu, NormError> {
        static GPU: OnceLock<Result<Gpu, NormError>> = OnceLock::new();
        GPU.get_or_init(|| {
            // SAFETY: these only try to open the shared libraries; no CUDA call is made.
            let driver = unsafe { cudarc::driver::sys::is_culib_present() };
            let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
            if !driver {
                return Err(NormError::NoGpu(
                    "the CUDA driver library (libcuda) was not found".into(),
                ));
            }
            if !nvrtc {
                return Err(NormError::NoGpu("NVRTC (libnvrtc) was not found".into()));
            }
            let ctx = CudaContext::new(0)
                .map_err(|e| NormError::NoGpu(format!("no usable CUDA device: {e:?}")))?;
            let stream = ctx.default_stream();
            Ok(Gpu {
                ctx,
                stream,
                modules: Mutex::new(HashMap::new()),
            })
        })
        .as_ref()
        .map_err(Clone::clone)
    }

    fn module(&self, dt: DType) -> Result<Arc<CudaModule>, NormError> {
        let mut m = self
            .modules
            .lock()
            .map_err(|_| NormError::Cuda("module cache poisoned".into()))?;
        if let Some(module) = m.get(&dt) {
            return Ok(module.clone());
        }
        let code = match dt {
            DType::F32 => 0,
            DType::F16 => 1,
            DType::BF16 => 2,
        };
        let opts = cudarc::nvrtc::CompileOptions {
            options: vec![format!("-DDG_DTYPE={code}")],
            ..Default::default()
        };
        let ptx = cudarc::nvrtc::compile_ptx_with_opts(SOURCE, opts)
            .map_err(|e| NormError::Cuda(format!("NVRTC: {e:?}")))?;
        let module = self.ctx.load_module(ptx).map_err(cuda)?;
        m.insert(dt, module.clone());
        Ok(module)
    }

    /// Uploads f32 host values converted to the storage type.
    pub fn upload(&self, dt: DType, values: &[f32]) -> Result<Buffer, NormError> {
        Ok(match dt {
            DType::F32 => Buffer::F32(self.stream.clone_htod(values).map_err(cuda)?),
            DType::F16 => Buffer::Half(
                self.stream
                    .clone_htod(&values.iter().map(|v| f32_to_f16(*v)).collect::<Vec<_>>())
                    .map_err(cuda)?,
            ),
            DType::BF16 => Buffer::Half(
                self.stream
                    .clone_htod(&values.iter().map(|v| f32_to_bf16(*v)).collect::<Vec<_>>())
                    .map_err(cuda)?,
            ),
        })
    }

    /// A buffer of `n` elements filled with a NaN pattern (poisoned), so unwritten outputs show.
    pub fn poisoned(&self, dt: DType, n: usize) -> Result<Buffer, NormError> {
        self.upload(dt, &vec![f32::NAN; n])
    }

    /// Downloads to f32.
    pub fn download(&self, dt: DType, b: &Buffer) -> Result<Vec<f32>, NormError> {
        Ok(match b {
            Buffer::F32(s) => self.stream.clone_dtoh(s).map_err(cuda)?,
            Buffer::Half(s) => {
                let bits: Vec<u16> = self.stream.clone_dtoh(s).map_err(cuda)?;
                bits.iter()
                    .map(|&h| {
                        if dt == DType::F16 {
                            f16_to_f32(h)
                        } else {
                            f32::from_bits((h as u32) << 16)
                        }
                    })
                    .collect()
            }
        })
    }

    /// Runs one layer: `y = layer(x)` for an input of `shape` (validates, uploads the
    /// parameters, launches). To run a layer many times, [`Gpu::prepare`] it once instead.
    pub fn run(
        &self,
        layer: &Layer,
        shape: &[usize],
        dt: DType,
        x: &Buffer,
        y: &mut Buffer,
    ) -> Result<(), NormError> {
        let mut p = self.prepare(layer, shape)?;
        self.launch(&mut p, dt, x, y)
    }

    /// Validates a layer for an input shape and uploads its parameters and work buffers.
    pub fn prepare(&self, layer: &Layer, shape: &[usize]) -> Result<Prepared, NormError> {
        layer.check(shape)?;
        let n: usize = shape.iter().product();
        let kind = match layer {
            Layer::Batch(bn) => {
                let (c, inner) = bn.plan(shape)?;
                let (scale, shift) = bn.folded();
                PreparedKind::Batch {
                    c,
                    inner,
                    scale: self.stream.clone_htod(&scale).map_err(cuda)?,
                    shift: self.stream.clone_htod(&shift).map_err(cuda)?,
                }
            }
            Layer::Norm(norm) => {
                let plan = norm.plan(shape)?;
                let param_len = if plan.b == 0 {
                    plan.group_size
                } else {
                    plan.a * plan.b
                };
                let (w, b) = norm.params(param_len);
                let chunks = if plan.group_size <= FUSED_MAX {
                    0
                } else {
                    plan.group_size.div_ceil(CHUNK)
                };
                PreparedKind::Norm {
                    plan,
                    eps: norm.eps,
                    w: self.stream.clone_htod(&w).map_err(cuda)?,
                    b: self.stream.clone_htod(&b).map_err(cuda)?,
                    part: self
                        .stream
                        .alloc_zeros::<f32>((3 * plan.groups * chunks).max(1))
                        .map_err(cuda)?,
                    stats: self
                        .stream
                        .alloc_zeros::<f32>((2 * plan.groups).max(1))
                        .map_err(cuda)?,
                    chunks,
                }
            }
        };
        Ok(Prepared { n, kind })
    }

    /// Launches a prepared layer on the stream.
    pub fn launch(
        &self,
        p: &mut Prepared,
        dt: DType,
        x: &Buffer,
        y: &mut Buffer,
    ) -> Result<(), NormError> {
        let module = self.module(dt)?;
        let n = p.n;
        let n64 = n as i64;
        match &mut p.kind {
            PreparedKind::Batch {
                c,
                inner,
                scale,
                shift,
            } => {
                let vec = 16 / dt.size();
                if n < i32::MAX as usize && *inner % vec == 0 {
                    let f = module.load_function("bn_infer_v").map_err(cuda)?;
                    let (nu, iu, cu) = (n as u32, *inner as u32, *c as u32);
                    let mut l = self.stream.launch_builder(&f);
                    push_io(&mut l, x, y);
                    l.arg(&*scale).arg(&*shift).arg(&nu).arg(&iu).arg(&cu);
                    // SAFETY: matches `bn_infer_v(const T*, T*, const float*, const float*,
                    // unsigned, unsigned, unsigned)`; n < 2^31, inner is a multiple of VEC so every
                    // 16-byte vector lies in one channel, and cudaMalloc buffers are 256-byte aligned.
                    unsafe { l.launch(grid_stride(n / vec)) }.map_err(cuda)?;
                    return Ok(());
                }
                let f = module.load_function("bn_infer").map_err(cuda)?;
                let (inner64, c32) = (*inner as i64, *c as i32);
                let mut l = self.stream.launch_builder(&f);
                push_io(&mut l, x, y);
                l.arg(&*scale)
                    .arg(&*shift)
                    .arg(&n64)
                    .arg(&inner64)
                    .arg(&c32);
                // SAFETY: the argument list matches `bn_infer(const T*, T*, const float*,
                // const float*, i64, i64, int)`; x and y hold n elements of the module's type,
                // scale and shift hold c floats.
                unsafe { l.launch(grid_stride(n)) }.map_err(cuda)?;
            }
            PreparedKind::Norm {
                plan,
                eps,
                w,
                b,
                part,
                stats,
                chunks,
            } => {
                let (gs, a, bb, s) = (
                    plan.group_size as i64,
                    plan.a as i64,
                    plan.b as i64,
                    plan.s as i64,
                );
                let affine = plan.affine as i32;
                let vec = 16 / dt.size();
                let vector_ok = n < i32::MAX as usize
                    && plan.group_size % vec == 0
                    && (plan.s == 1 || plan.s % vec == 0);
                let (gsu, au, bu, su) = (
                    plan.group_size as u32,
                    plan.a as u32,
                    plan.b as u32,
                    plan.s as u32,
                );
                if *chunks == 0 {
                    let f = module
                        .load_function(if vector_ok {
                            "norm_fused_v"
                        } else {
                            "norm_fused"
                        })
                        .map_err(cuda)?;
                    let cfg = LaunchConfig {
                        grid_dim: (plan.groups as u32, 1, 1),
                        block_dim: (FUSED_THREADS, 1, 1),
                        shared_mem_bytes: 0,
                    };
                    let mut l = self.stream.launch_builder(&f);
                    push_io(&mut l, x, y);
                    l.arg(&*w).arg(&*b);
                    if vector_ok {
                        l.arg(&gsu).arg(&au).arg(&bu).arg(&su);
                    } else {
                        l.arg(&gs).arg(&a).arg(&bb).arg(&s);
                    }
                    l.arg(&*eps).arg(&affine);
                    // SAFETY: matches `norm_fused(const T*, T*, const float*, const float*, i64,
                    // i64, i64, i64, float, int)` or, with vectors, `norm_fused_v(..., unsigned x4,
                    // float, int)` (groups are multiples of VEC elements, so every vector is
                    // aligned and inside its group); one block per group of at most FUSED_MAX
                    // elements; w and b hold the plan's parameter count.
                    unsafe { l.launch(cfg) }.map_err(cuda)?;
                    return Ok(());
                }
                let (chunk64, chunks32, groups64) =
                    (CHUNK as i64, *chunks as i32, plan.groups as i64);
                let f = module
                    .load_function(if vector_ok {
                        "norm_partial_v"
                    } else {
                        "norm_partial"
                    })
                    .map_err(cuda)?;
                let cfg = LaunchConfig {
                    grid_dim: ((plan.groups * *chunks) as u32, 1, 1),
                    block_dim: (512, 1, 1),
                    shared_mem_bytes: 0,
                };
                let mut l = self.stream.launch_builder(&f);
                match x {
                    Buffer::F32(s) => l.arg(s),
                    Buffer::Half(s) => l.arg(s),
                };
                let chunk_u = CHUNK as u32;
                if vector_ok {
                    l.arg(&mut *part).arg(&gsu).arg(&chunk_u).arg(&chunks32);
                } else {
                    l.arg(&mut *part).arg(&gs).arg(&chunk64).arg(&chunks32);
                }
                // SAFETY: matches `norm_partial(const T*, float*, i64, i64, int)` or, with
                // vectors, `norm_partial_v(const T*, float*, unsigned, unsigned, int)` (CHUNK and
                // the group size are multiples of VEC); `part` holds 3 floats per block.
                unsafe { l.launch(cfg) }.map_err(cuda)?;
                let f = module.load_function("norm_finalize").map_err(cuda)?;
                let mut l = self.stream.launch_builder(&f);
                l.arg(&*part)
                    .arg(&mut *stats)
                    .arg(&groups64)
                    .arg(&chunks32)
                    .arg(&*eps);
                // SAFETY: matches `norm_finalize(const float*, float*, i64, int, float)`; `stats`
                // holds 2 floats per group.
                unsafe { l.launch(LaunchConfig::for_num_elems(plan.groups as u32)) }
                    .map_err(cuda)?;
                let f = module.load_function("norm_apply").map_err(cuda)?;
                let mut l = self.stream.launch_builder(&f);
                push_io(&mut l, x, y);
                l.arg(&*stats)
                    .arg(&*w)
                    .arg(&*b)
                    .arg(&n64)
                    .arg(&gs)
                    .arg(&a)
                    .arg(&bb)
                    .arg(&s)
                    .arg(&affine);
                // SAFETY: matches `norm_apply(const T*, T*, const float*, const float*,
                // const float*, i64, i64, i64, i64, i64, int)`; x and y hold n elements.
                unsafe { l.launch(grid_stride(n)) }.map_err(cuda)?;
            }
        }
        Ok(())
    }

    /// Device-to-device copy of `bytes` (the bandwidth reference), returning milliseconds.
    pub fn copy_ms(&self, bytes: usize, iters: usize) -> Result<f32, NormError> {
        let src = self.stream.alloc_zeros::<u8>(bytes).map_err(cuda)?;
        let mut dst = self.stream.alloc_zeros::<u8>(bytes).map_err(cuda)?;
        self.stream.memcpy_dtod(&src, &mut dst).map_err(cuda)?;
        self.time(iters, || {
            self.stream.memcpy_dtod(&src, &mut dst).map_err(cuda)
        })
    }

    /// Mean milliseconds of `f` over `iters` runs (CUDA events on the stream).
    pub fn time(
        &self,
        iters: usize,
        mut f: impl FnMut() -> Result<(), NormError>,
    ) -> Result<f32, NormError> {
        f()?;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(flags).map_err(cuda)?;
        for _ in 0..iters {
            f()?;
        }
        let end = self.stream.record_event(flags).map_err(cuda)?;
        end.synchronize().map_err(cuda)?;
        Ok(start.elapsed_ms(&end).map_err(cuda)? / iters as f32)
    }
}

fn grid_stride(n: usize) -> LaunchConfig {
    let blocks = n.div_ceil(256).clamp(1, 132 * 32) as u32;
    LaunchConfig {
        grid_dim: (blocks, 1, 1),
        block_dim: (256, 1, 1),
        shared_mem_bytes: 0,
    }
}

fn push_io<'a>(l: &mut cudarc::driver::LaunchArgs<'a>, x: &'a Buffer, y: &'a mut Buffer) {
    match x {
        Buffer::F32(s) => l.arg(s),
        Buffer::Half(s) => l.arg(s),
    };
    match y {
        Buffer::F32(s) => l.arg(s),
        Buffer::Half(s) => l.arg(s),
    };
}

/// IEEE half from f32 (round to nearest even).
pub fn f32_to_f16(v: f32) -> u16 {
    let x = v.to_bits();
    let sign = ((x >> 16) & 0x8000) as u16;
    let exp = ((x >> 23) & 0xff) as i32;
    let mant = x & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if mant != 0 { 0x200 } else { 0 };
    }
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        if e < -10 {
            return sign;
        }
        let m = mant | 0x80_0000;
        let shift = (14 - e) as u32;
        let half = 1u32 << (shift - 1);
        let rounded = (m + half - 1 + ((m >> shift) & 1)) >> shift;
        return sign | rounded as u16;
    }
    let rounded = mant + 0xfff + ((mant >> 13) & 1);
    let (e, m) = if rounded & 0x80_0000 != 0 {
        (e + 1, 0)
    } else {
        (e, rounded >> 13)
    };
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    sign | ((e as u16) << 10) | m as u16
}

/// f32 from IEEE half.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = ((h & 0x8000) as u32) << 16;
    let exp = ((h >> 10) & 0x1f) as u32;
    let mant = (h & 0x3ff) as u32;
    let bits = match (exp, mant) {
        (0, 0) => sign,
        (0, m) => {
            let f = m as f32 * (1.0 / 16_777_216.0);
            return if sign != 0 { -f } else { f };
        }
        (0x1f, m) => sign | 0x7f80_0000 | (m << 13),
        (e, m) => sign | ((e + 127 - 15) << 23) | (m << 13),
    };
    f32::from_bits(bits)
}

/// bfloat16 from f32 (round to nearest even).
pub fn f32_to_bf16(v: f32) -> u16 {
    let u = v.to_bits();
    if v.is_nan() {
        return ((u >> 16) | 0x40) as u16;
    }
    ((u + 0x7fff + ((u >> 16) & 1)) >> 16) as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_conversions_round_trip() {
        for v in [0.0f32, 1.0, -2.5, 65504.0, 1e-5, 3.25, -0.1, 6.1e-5] {
            let h = f32_to_f16(v);
            let back = f16_to_f32(h);
            assert!((back - v).abs() <= v.abs() * 1e-3 + 1e-7, "{v} -> {back}");
            let b = f32::from_bits((f32_to_bf16(v) as u32) << 16);
            assert!((b - v).abs() <= v.abs() * 1e-2, "{v} -> {b}");
        }
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
    }
}
