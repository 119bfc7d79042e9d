//! The normalization kernels on an NVIDIA GPU, through cudarc (dynamic loading: the crate builds
//! and its CPU tests run on machines without CUDA).
//!
//! The kernels (`kernels.cu`) are compiled by NVRTC for the device's architecture and loaded once
//! per storage type per process. A [`Buffer`] carries its storage type and length, and every
//! launch checks both against the prepared layer and shape (and every bound run-time parameter's
//! length against the layer) before anything is queued: safe code cannot make a kernel read or
//! write past a buffer. Grids come from the device's multiprocessor count and the kernels'
//! occupancy. All work runs on one stream owned by [`Gpu`].
//!
//! Which kernel normalizes a layer's groups ([`Strategy::Auto`], per shape and type):
//!
//! * groups of at most 512 threads × 4 × 16 bytes (8,192 fp32 or 16,384 fp16/bf16 values), or
//!   × 8 × 16 bytes for vector plans (16,384 or 32,768 values): **fused**, one block per group,
//!   the values held in registers as stored; one read and one write. Per-element parameters
//!   (LayerNorm rows) are staged in shared memory while the values load.
//! * vector plans whose groups fit in 2, 4 or 8 slabs of a quarter of a multiprocessor's shared
//!   memory (compute capability 9.0 or newer): the **cluster** path, one thread-block cluster per
//!   group, each block holding one slab, the slabs' statistics exchanged through distributed
//!   shared memory; one read and one write.
//! * other groups that fit in shared memory across the co-resident blocks (k slabs, k ≤ blocks that fit
//!   on the device at once; 29 MB on an H100): the **slab** path, a persistent grid that holds each
//!   slab on chip while the group's statistics are combined across blocks; one read and one write.
//!   Vector plans without per-element parameters, with more slabs than its buffers hold at once,
//!   take the **pipelined** slab kernel (producer warps load the next slab and publish its
//!   statistics while consumer warps normalize); the others the one-buffer kernel.
//! * larger groups, or per-element (LayerNorm) parameters over more groups than one slab batch
//!   holds: **three passes** (partial statistics, combine, normalize; per-element parameters
//!   applied in column order, each read once), which reads the tensor twice.

use crate::layer::invalid;
use crate::{half, DType, Layer, NoGpu, NormError, Param, Plan};
use cudarc::driver::sys::{CUdevice_attribute, CUfunction_attribute, CUstreamCaptureMode};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, DevicePtr, LaunchConfig,
    PushKernelArg,
};
use std::sync::{Arc, Mutex, OnceLock};

const SOURCE: &str = include_str!("kernels.cu");
/// Threads per block of the slab and three-pass kernels.
const BIG_THREADS: u32 = 256;
/// Blocks per multiprocessor the one-buffer slab kernel is sized for (environment variable
/// `NORM_SLAB_BLOCKS`, 1 to 4, overrides it and `PIPE_BLOCKS` for tuning).
const SLAB_BLOCKS: usize = 4;
/// Threads per block of the pipelined slab kernel (half producers, half consumers).
const PIPE_THREADS: u32 = 512;
/// Most blocks per multiprocessor the pipelined slab kernel is sized for (its launch bounds cap
/// the registers so that 3 fit; fewer where the device allows fewer).
const PIPE_BLOCKS: usize = 3;
/// Threads per block of the grid-stride kernels.
const STRIDE_THREADS: u32 = 256;
/// Most threads per block of the fused kernel.
const FUSED_THREADS: usize = 512;
/// Accesses per thread in the fused kernel (`NV` in the source).
const FUSED_ACCESSES: usize = 4;
/// Elements per chunk in the partial-statistics pass of the three-pass path: `BIG_THREADS` ×
/// `CHUNK_PER_THREAD` (64) of the kernel, every value held in registers.
const CHUNK: usize = BIG_THREADS as usize * 64;

/// A device buffer of one storage type. Made only by [`Gpu`] (so its type and its bits agree);
/// its length is in elements.
pub struct Buffer {
    dtype: DType,
    data: Data,
}

enum Data {
    F32(CudaSlice<f32>),
    Bits(CudaSlice<u16>),
}

impl Buffer {
    /// Storage type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// Number of elements.
    pub fn len(&self) -> usize {
        match &self.data {
            Data::F32(s) => s.len(),
            Data::Bits(s) => s.len(),
        }
    }

    /// Whether the buffer holds no element.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The device address (for kernel arguments; the buffer outlives every launch it is passed
    /// to because the stream is synchronized before a buffer is freed by cudarc).
    fn ptr(&self, stream: &CudaStream) -> u64 {
        match &self.data {
            Data::F32(s) => s.device_ptr(stream).0,
            Data::Bits(s) => s.device_ptr(stream).0,
        }
    }
}

impl std::fmt::Debug for Buffer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Buffer({}, {} elements)", self.dtype.name(), self.len())
    }
}

/// How a [`crate::Norm`] layer's groups are normalized (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// Chosen per shape: fused, slab, or three passes, the first that applies.
    Auto,
    /// One block per group, values in registers (small groups only).
    Fused,
    /// Persistent grid, groups held on chip in slabs (one buffer per block).
    Slab,
    /// The slab path's pipelined kernel: producer and consumer warps over two buffers per
    /// block (vector plans without per-element parameters).
    Pipelined,
    /// One thread-block cluster of 2, 4 or 8 blocks per group, each block holding a slab in
    /// shared memory and the statistics exchanged through distributed shared memory (vector
    /// plans, compute capability 9.0 or newer).
    Cluster,
    /// Partial statistics, combine, normalize.
    ThreePass,
}

/// The kernels of one storage type, compiled and loaded once.
struct Kernels {
    _module: Arc<CudaModule>,
    /// BatchNorm with folded parameters: `bn_32` with 1 and 2 accesses per thread, then `bn_64`
    /// (2 accesses, 64-bit indices).
    bn: [CudaFunction; 3],
    /// The same with the four parameters read at run time (`bn_rt_*`).
    bn_rt: [CudaFunction; 3],
    /// BatchNorm over planes of whole vectors, 1 and 2 accesses per thread: `[run-time
    /// parameters][accesses - 1]` (`bnp_*`, `bnp_rt_*`).
    bnp: [[CudaFunction; 2]; 2],
    /// `[vector][parameters stored as T]`.
    fused: [[CudaFunction; 2]; 2],
    /// Vector fused kernels with 8 accesses per thread: `[parameters stored as T]`.
    fused8: [CudaFunction; 2],
    /// Vector fused kernels (4 accesses) that stage per-element parameters in shared memory:
    /// `[parameters stored as T]`.
    fused_staged: [CudaFunction; 2],
    /// Cluster kernels of 2, 4 and 8 blocks: `[log2(CL) - 1][parameters stored as T]` (compute
    /// capability 9.0 or newer).
    cluster: Option<[[CudaFunction; 2]; 3]>,
    /// An empty kernel (the launch floor).
    empty: CudaFunction,
    slab: [[CudaFunction; 2]; 2],
    /// Pipelined slab kernel (vector only): `[parameters stored as T]`.
    pipe: [CudaFunction; 2],
    apply: [[CudaFunction; 2]; 2],
    /// Column-order apply for per-element parameters.
    apply_cols: [[CudaFunction; 2]; 2],
    /// `[vector]`.
    partial: [CudaFunction; 2],
    finalize: CudaFunction,
    to_f32: CudaFunction,
}

impl Kernels {
    /// The fused kernel with `accesses` accesses per thread (8 for vector plans only, else 4).
    fn fused_fn(&self, vector: bool, accesses: usize, pt: bool) -> &CudaFunction {
        match (vector, accesses) {
            (true, 8) => &self.fused8[pt as usize],
            _ => &self.fused[vector as usize][pt as usize],
        }
    }

    /// The BatchNorm kernel: run-time parameters or folded ones, 64-bit indices (2 accesses per
    /// thread) or 32-bit ones with 1 or 2.
    fn bn_fn(&self, runtime: bool, wide: bool, accesses: usize, planes: bool) -> &CudaFunction {
        if planes {
            return &self.bnp[runtime as usize][(accesses == 2) as usize];
        }
        let set = if runtime { &self.bn_rt } else { &self.bn };
        match (wide, accesses) {
            (true, _) => &set[2],
            (false, 1) => &set[0],
            _ => &set[1],
        }
    }
}

/// A GPU with its stream; kernels are compiled on first use.
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    sms: u32,
    /// Most resident threads per multiprocessor.
    threads_per_sm: usize,
    /// Shared memory per multiprocessor and the most one block may opt in to.
    smem_per_sm: usize,
    smem_per_block: usize,
    /// Settings from the environment, for tuning.
    tuning: Tuning,
    /// Compute capability (major); clusters need 9 or more.
    major: i32,
    arch: String,
    kernels: Mutex<[Option<Arc<Kernels>>; 3]>,
}

/// Settings read once from the environment, for tuning and for benchmarks that compare kernel
/// configurations (each overrides the rule that is otherwise measured and fixed here):
/// `NORM_SLAB_BLOCKS` (1 to 4) sizes the slabs, `NORM_BN_ACCESSES` (1, 2) and `NORM_BN_THREADS`
/// (32 to 1024) shape BatchNorm's blocks, `NORM_BN_PLANES` (0, 1) turns its plane kernel off or
/// on, `NORM_FUSED_ACCESSES` (2, 4, 8) the fused kernel's, `NORM_FUSED_STAGED` (0, 1) its staging
/// of per-element parameters, `NORM_CLUSTER` (2, 4, 8) the cluster size.
#[derive(Debug, Clone, Copy, Default)]
struct Tuning {
    slab_blocks: Option<usize>,
    bn_accesses: Option<usize>,
    bn_threads: Option<u32>,
    bn_planes: Option<bool>,
    fused_accesses: Option<usize>,
    fused_staged: Option<bool>,
    cluster: Option<usize>,
}

impl Tuning {
    fn from_env() -> Tuning {
        fn var<T: std::str::FromStr>(name: &str, ok: impl Fn(&T) -> bool) -> Option<T> {
            std::env::var(name)
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(ok)
        }
        Tuning {
            slab_blocks: var("NORM_SLAB_BLOCKS", |b| (1..=4).contains(b)),
            bn_accesses: var("NORM_BN_ACCESSES", |a| [1, 2].contains(a)),
            bn_threads: var("NORM_BN_THREADS", |t| {
                (32..=1024).contains(t) && t % 32 == 0
            }),
            bn_planes: var("NORM_BN_PLANES", |p: &u8| *p <= 1).map(|p| p == 1),
            fused_accesses: var("NORM_FUSED_ACCESSES", |a| [2, 4, 8].contains(a)),
            fused_staged: var("NORM_FUSED_STAGED", |p: &u8| *p <= 1).map(|p| p == 1),
            cluster: var("NORM_CLUSTER", |c| [2, 4, 8].contains(c)),
        }
    }
}

fn no_gpu(what: &'static str, e: impl std::fmt::Display) -> NoGpu {
    NoGpu::Driver {
        what,
        message: e.to_string(),
    }
}

impl Gpu {
    /// The process's GPU 0, or why there is none (never a panic: the driver and NVRTC libraries
    /// are looked for before cudarc touches them).
    pub fn get() -> Result<&'static Gpu, NormError> {
        static GPU: OnceLock<Result<Gpu, NoGpu>> = OnceLock::new();
        GPU.get_or_init(Gpu::open)
            .as_ref()
            .map_err(|e| NormError::NoGpu(e.clone()))
    }

    fn open() -> Result<Gpu, NoGpu> {
        // SAFETY: these only try to open the shared libraries; no CUDA call is made.
        let driver = unsafe { cudarc::driver::sys::is_culib_present() };
        // SAFETY: as above.
        let nvrtc = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        if !driver {
            return Err(NoGpu::NoDriver);
        }
        if !nvrtc {
            return Err(NoGpu::NoNvrtc);
        }
        let ctx = CudaContext::new(0).map_err(|e| no_gpu("no usable CUDA device", e))?;
        // SAFETY: every buffer of this crate is made, used and freed on the one stream created
        // below, which no caller can reach (the stream is private to `Gpu`), so work is ordered
        // by the stream and cudarc's cross-stream events are not needed. Without them, kernel
        // launches can be captured into CUDA graphs.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| no_gpu("cannot create a stream", e))?;
        let attr = |a| {
            ctx.attribute(a)
                .map_err(|e| no_gpu("cannot read a device attribute", e))
        };
        let sms = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        let threads_per_sm =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR)?;
        let smem_per_sm =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR)?;
        let smem_per_block =
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?;
        let major = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        if major < 7 {
            return Err(NoGpu::TooOld { major, minor });
        }
        let name = ctx.name().unwrap_or_else(|_| "unknown GPU".into());
        Ok(Gpu {
            ctx,
            stream,
            name,
            sms: sms.max(1) as u32,
            threads_per_sm: threads_per_sm.max(32) as usize,
            smem_per_sm: smem_per_sm.max(0) as usize,
            smem_per_block: smem_per_block.max(0) as usize,
            tuning: Tuning::from_env(),
            major,
            arch: format!("compute_{major}{minor}"),
            kernels: Mutex::new([None, None, None]),
        })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the device runs thread-block clusters (compute capability 9.0 or newer), which
    /// [`Strategy::Cluster`] needs.
    pub fn has_clusters(&self) -> bool {
        self.major >= 9
    }

    /// The device's multiprocessor count.
    pub fn sm_count(&self) -> u32 {
        self.sms
    }

    /// Largest slab in bytes: `blocks` blocks per multiprocessor, each with `buffers` slabs and a
    /// little static shared memory.
    fn slab_max_bytes(&self, blocks: usize, buffers: usize) -> usize {
        ((self.smem_per_sm / blocks.max(1)).saturating_sub(2048))
            .min(self.smem_per_block)
            .saturating_sub(1024)
            / buffers
            / 16
            * 16
    }

    fn kernels(&self, dt: DType) -> Result<Arc<Kernels>, NormError> {
        let mut cache = self
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let slot = &mut cache[dt.code() as usize];
        if let Some(k) = slot {
            return Ok(k.clone());
        }
        let ptx = self.compile(dt)?;
        self.load(ptx, slot)
    }

    /// NVRTC's PTX of the kernels for one storage type (CPU work only).
    fn compile(&self, dt: DType) -> Result<cudarc::nvrtc::Ptx, NormError> {
        let opts = cudarc::nvrtc::CompileOptions {
            options: vec![
                format!("-DDG_DTYPE={}", dt.code()),
                format!("--gpu-architecture={}", self.arch),
                "-std=c++17".into(),
            ],
            ..Default::default()
        };
        Ok(cudarc::nvrtc::compile_ptx_with_opts(SOURCE, opts)?)
    }

    /// Compiles the kernels of the given storage types that are not loaded yet, in parallel
    /// (one thread each), and loads them: a program that will use several types pays for one
    /// compilation instead of several in a row.
    pub fn preload(&self, dts: &[DType]) -> Result<(), NormError> {
        let missing: Vec<DType> = {
            let cache = self
                .kernels
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            dts.iter()
                .copied()
                .filter(|dt| cache[dt.code() as usize].is_none())
                .collect()
        };
        let compiled: Vec<_> = std::thread::scope(|scope| {
            let handles: Vec<_> = missing
                .iter()
                .map(|&dt| scope.spawn(move || self.compile(dt)))
                .collect();
            handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        });
        let mut cache = self
            .kernels
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for (dt, ptx) in missing.into_iter().zip(compiled) {
            let slot = &mut cache[dt.code() as usize];
            if slot.is_none() {
                self.load(ptx?, slot)?;
            }
        }
        Ok(())
    }

    /// Loads a compiled module and its functions into `slot`.
    fn load(
        &self,
        ptx: cudarc::nvrtc::Ptx,
        slot: &mut Option<Arc<Kernels>>,
    ) -> Result<Arc<Kernels>, NormError> {
        self.ctx.bind_to_thread()?;
        let module = self.ctx.load_module(ptx)?;
        let f = |name: &str| module.load_function(name);
        let pair =
            |a: &str, b: &str| -> Result<[CudaFunction; 2], NormError> { Ok([f(a)?, f(b)?]) };
        let k = Kernels {
            bn: [f("bn_32_1")?, f("bn_32_2")?, f("bn_64_2")?],
            bn_rt: [f("bn_rt_32_1")?, f("bn_rt_32_2")?, f("bn_rt_64_2")?],
            bnp: [pair("bnp_1", "bnp_2")?, pair("bnp_rt_1", "bnp_rt_2")?],
            fused: [
                pair("fused_s_pf", "fused_s_pt")?,
                pair("fused_v_pf", "fused_v_pt")?,
            ],
            fused8: pair("fused_v8_pf", "fused_v8_pt")?,
            fused_staged: pair("fused_vs_pf", "fused_vs_pt")?,
            cluster: if self.major >= 9 {
                Some([
                    pair("cluster2_pf", "cluster2_pt")?,
                    pair("cluster4_pf", "cluster4_pt")?,
                    pair("cluster8_pf", "cluster8_pt")?,
                ])
            } else {
                None
            },
            empty: f("empty")?,
            slab: [
                pair("slab_s_pf", "slab_s_pt")?,
                pair("slab_v_pf", "slab_v_pt")?,
            ],
            pipe: pair("pipe_pf", "pipe_pt")?,
            apply: [
                pair("apply_s_pf", "apply_s_pt")?,
                pair("apply_v_pf", "apply_v_pt")?,
            ],
            apply_cols: [
                pair("apply_cols_s_pf", "apply_cols_s_pt")?,
                pair("apply_cols_v_pf", "apply_cols_v_pt")?,
            ],
            partial: pair("partial_s", "partial_v")?,
            finalize: f("finalize")?,
            to_f32: f("to_f32")?,
            _module: module.clone(),
        };
        // Allow the slab kernels as much dynamic shared memory as one block may have (less their
        // static shared memory); each launch asks for what its slabs need.
        let max = self.smem_per_block.saturating_sub(1024) as i32;
        let clusters = k.cluster.iter().flatten().flatten();
        let slabs = k.slab.iter().flatten().chain(&k.pipe);
        for func in slabs.chain(clusters).chain(&k.fused_staged) {
            func.set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                max,
            )?;
        }
        let k = Arc::new(k);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// Uploads f32 host values converted to the storage type.
    pub fn upload(&self, dt: DType, values: &[f32]) -> Result<Buffer, NormError> {
        let data = match dt {
            DType::F32 => Data::F32(self.stream.clone_htod(values)?),
            DType::F16 => Data::Bits(
                self.stream.clone_htod(
                    &values
                        .iter()
                        .map(|v| half::f32_to_f16(*v))
                        .collect::<Vec<_>>(),
                )?,
            ),
            DType::BF16 => Data::Bits(
                self.stream.clone_htod(
                    &values
                        .iter()
                        .map(|v| half::f32_to_bf16(*v))
                        .collect::<Vec<_>>(),
                )?,
            ),
        };
        Ok(Buffer { dtype: dt, data })
    }

    /// A buffer of `n` elements filled with NaN (poisoned), so unwritten outputs show.
    pub fn poisoned(&self, dt: DType, n: usize) -> Result<Buffer, NormError> {
        self.upload(dt, &vec![f32::NAN; n])
    }

    /// Downloads to f32.
    pub fn download(&self, b: &Buffer) -> Result<Vec<f32>, NormError> {
        Ok(match &b.data {
            Data::F32(s) => self.stream.clone_dtoh(s)?,
            Data::Bits(s) => {
                let bits: Vec<u16> = self.stream.clone_dtoh(s)?;
                let conv = if b.dtype == DType::F16 {
                    half::f16_to_f32
                } else {
                    half::bf16_to_f32
                };
                bits.into_iter().map(conv).collect()
            }
        })
    }

    /// Waits for the stream.
    pub fn synchronize(&self) -> Result<(), NormError> {
        Ok(self.stream.synchronize()?)
    }

    /// Runs one layer once: `y = layer(x)` for an input of `shape` (validates, uploads the
    /// parameters, launches). To run a layer many times, [`Gpu::prepare`] it once instead.
    pub fn run(
        &self,
        layer: &Layer,
        shape: &[usize],
        x: &Buffer,
        y: &mut Buffer,
        bound: &[(&str, &Buffer)],
    ) -> Result<(), NormError> {
        let mut p = self.prepare(layer, shape, x.dtype(), Strategy::Auto)?;
        self.launch(&mut p, x, y, bound)
    }

    /// Validates a layer for an input shape and storage type, picks its kernels, and uploads its
    /// constant parameters and work buffers.
    pub fn prepare(
        &self,
        layer: &Layer,
        shape: &[usize],
        dt: DType,
        strategy: Strategy,
    ) -> Result<Prepared, NormError> {
        layer.check(shape)?;
        // The occupancy and attribute calls below need the context current on this thread.
        self.ctx.bind_to_thread()?;
        let kernels = self.kernels(dt)?;
        let n: usize = shape.iter().product();
        let runtime = layer.runtime_params(shape)?;
        let kind = match layer {
            Layer::Batch(bn) => self.prepare_batch(bn, shape, dt)?,
            Layer::Norm(norm) => {
                let plan = norm.plan(shape)?;
                let params = self.norm_params(norm, &plan, dt)?;
                let path = self.pick(&kernels, &plan, dt, strategy, layer.name(), shape)?;
                // Three passes: 3 floats per chunk and 2 per group; slabs: one slot per slab.
                let (chunks, slabs) = match path {
                    Path::Slab { total, .. } => (0, total),
                    Path::ThreePass { chunks, .. } => (plan.groups * chunks, 0),
                    Path::Fused { .. } | Path::Cluster { .. } => (0, 0),
                };
                Kind::Norm {
                    part: self.stream.alloc_zeros::<f32>((3 * chunks).max(1))?,
                    stats: self.stream.alloc_zeros::<f32>((2 * plan.groups).max(1))?,
                    sync: self.stream.alloc_zeros::<u32>(2)?,
                    // Empty (all ones) until a slab's statistics are published.
                    slots: Box::new(self.stream.clone_htod(&vec![u64::MAX; slabs.max(1)])?),
                    plan,
                    eps: norm.eps,
                    params,
                    path,
                }
            }
        };
        Ok(Prepared {
            layer: layer.name().to_string(),
            shape: shape.to_vec(),
            dtype: dt,
            n,
            runtime,
            kernels,
            kind,
        })
    }

    fn prepare_batch(
        &self,
        bn: &crate::BatchNorm,
        shape: &[usize],
        dt: DType,
    ) -> Result<Kind, NormError> {
        let (c, inner) = bn.plan(shape)?;
        let n: usize = shape.iter().product();
        let wide = n > u32::MAX as usize;
        // One tile of `accesses` 16-byte accesses per thread per block (the kernel strides over
        // tiles if the grid is capped): one access per thread in 256-thread blocks, every load
        // in flight at once, for fp32 with constant parameters and for tensors that one wave of
        // the device's threads covers (small ones: latency, not bandwidth); two per thread in
        // 128-thread blocks for larger 16-bit tensors and for run-time parameters, which each
        // thread folds once for both (measured: docs/NORM.md).
        let vectors = n.div_ceil(16 / dt.size());
        let one_wave = vectors <= self.sms as usize * self.threads_per_sm;
        let runtime = bn.folded(c).is_none();
        let accesses = match self.tuning.bn_accesses {
            Some(a) if !wide => a,
            _ if (one_wave || (dt == DType::F32 && !runtime)) && !wide => 1,
            _ => 2,
        };
        let threads = self
            .tuning
            .bn_threads
            .unwrap_or(if accesses == 1 { 256 } else { 128 });
        // Planes of whole vectors (NCHW with H * W a multiple of VEC): the plane kernel, whose
        // blocks each lie in one plane, so one channel (measured: docs/NORM.md), on a grid of
        // (chunks, C, N) blocks.
        let vec = 16 / dt.size();
        let tile = accesses * threads as usize;
        let batch = n.checked_div(inner * c).unwrap_or(0);
        let planes = (self.tuning.bn_planes.unwrap_or(true)
            && !wide
            && inner % vec == 0
            && (1..=65535).contains(&c)
            && (1..=65535).contains(&batch))
        .then(|| (inner / vec).div_ceil(tile))
        .filter(|chunks| (1..=i32::MAX as usize).contains(chunks))
        .map(|chunks| [chunks as u32, c as u32, batch as u32]);
        let grid = vectors.div_ceil(tile).clamp(1, i32::MAX as usize) as u32;
        let (folded, consts) = match bn.folded(c) {
            Some((scale, shift)) => (
                Some([
                    self.stream.clone_htod(&scale)?,
                    self.stream.clone_htod(&shift)?,
                ]),
                Vec::new(),
            ),
            None => {
                // Some parameter arrives at run time: constants are uploaded as they are and
                // the kernel folds them with the bound tensors as it reads them.
                let mut consts = Vec::new();
                for (_, p, _) in bn.params() {
                    consts.push(match p {
                        Param::Const(v) => Some(self.stream.clone_htod(v)?),
                        _ => None,
                    });
                }
                (None, consts)
            }
        };
        Ok(Kind::Batch {
            c,
            inner,
            wide,
            planes,
            accesses,
            grid,
            threads,
            eps: bn.eps,
            params: [
                bn.mean.clone(),
                bn.var.clone(),
                bn.weight.clone(),
                bn.bias.clone(),
            ],
            folded,
            consts,
        })
    }

    /// Scale and bias on the device: stored in the tensor's own type when every constant is
    /// exactly representable in it (half the parameter traffic of f32 for LayerNorm), in f32
    /// otherwise. With a run-time parameter, constants go to an f32 work buffer that the bound
    /// values are converted into at each launch (or the bound buffers are used directly when both
    /// parameters are run-time tensors of one type: f32 or the tensor's).
    fn norm_params(
        &self,
        norm: &crate::Norm,
        plan: &Plan,
        dt: DType,
    ) -> Result<NormParams, NormError> {
        let len = plan.param_len.max(1);
        let fill = |p: &Param, d: f32| match p {
            Param::Const(v) => v.clone(),
            _ => vec![d; len],
        };
        let (w, b) = (fill(&norm.scale, 1.0), fill(&norm.bias, 0.0));
        let runtime = [&norm.scale, &norm.bias].map(|p| match p {
            Param::Runtime(t) => Some(t.clone()),
            _ => None,
        });
        let exact = |v: &[f32]| v.iter().all(|&x| half::round_to(dt, x) == x);
        let narrow =
            dt != DType::F32 && runtime.iter().all(Option::is_none) && exact(&w) && exact(&b);
        let (w, b) = if narrow {
            (self.upload(dt, &w)?, self.upload(dt, &b)?)
        } else {
            (self.upload(DType::F32, &w)?, self.upload(DType::F32, &b)?)
        };
        Ok(NormParams {
            w,
            b,
            runtime,
            len: plan.param_len,
        })
    }

    fn pick(
        &self,
        kernels: &Kernels,
        plan: &Plan,
        dt: DType,
        strategy: Strategy,
        layer: &str,
        shape: &[usize],
    ) -> Result<Path, NormError> {
        let vec = 16 / dt.size();
        let gs = plan.group_size;
        // Vector accesses need every vector inside one group and one parameter slot.
        let vector = gs % vec == 0 && (plan.s == 1 || plan.s % vec == 0);
        // The scalar kernel holds as many values as the vector one in more registers: fewer
        // threads fit in a block.
        let max_threads = |accesses| -> Result<usize, NormError> {
            Ok((kernels
                .fused_fn(vector, accesses, false)
                .max_threads_per_block()? as usize)
                .min(FUSED_THREADS)
                / 32
                * 32)
        };
        // Four accesses per thread, or eight (vector plans) for groups that four do not cover
        // in one block.
        let accesses = match self.tuning.fused_accesses {
            Some(a) if vector => a,
            _ if vector && gs > max_threads(FUSED_ACCESSES)? * FUSED_ACCESSES * vec => 8,
            _ => FUSED_ACCESSES,
        };
        let per_thread = accesses * vec;
        let max_threads = max_threads(accesses)?;
        let fused_ok = gs <= max_threads * per_thread && plan.groups <= i32::MAX as usize;
        let slab = self.slab_path(kernels, plan, dt, vector, false)?;
        let pipelined = self.slab_path(kernels, plan, dt, vector, true)?;
        let cluster = self.cluster_path(kernels, plan, dt, vector);
        // Per-element parameters (LayerNorm) are applied in column order by the three-pass
        // path: each parameter read once, not once per group.
        let per_element = plan.affine && plan.s == 1 && plan.b == 0;
        let three = || {
            let chunks = gs.div_ceil(CHUNK);
            let access = if vector { vec } else { 1 };
            let grid = if per_element {
                self.stride_grid(&kernels.apply_cols[vector as usize][0], gs / access)?
            } else {
                self.stride_grid(
                    &kernels.apply[vector as usize][0],
                    plan.groups * gs / access,
                )?
            };
            Ok::<Path, NormError>(Path::ThreePass {
                vector,
                columns: per_element,
                chunks,
                grid,
            })
        };
        // Per-element parameters: slabs read the tensor once but the parameters once per batch
        // of m groups (L2 shares them only inside a batch); three passes read the tensor twice
        // and the parameters once. Slabs only when one batch holds every group (parameters read
        // once): with several batches the three passes measured faster (docs/NORM.md).
        let slab_reads_more = |s: &Path| match s {
            Path::Slab { m, .. } if per_element => *m < plan.groups,
            _ => false,
        };
        let threads =
            (gs.div_ceil(per_thread).div_ceil(32) * 32).clamp(32, max_threads.max(32)) as u32;
        // Per-element parameters (LayerNorm) staged in shared memory while x loads, for vector
        // plans with 4 accesses per thread whose blocks the staged kernel takes (its launch
        // bounds) and whose parameters fit (as f32, the larger case): 2 * gs values.
        let staged_threads = kernels.fused_staged[0]
            .max_threads_per_block()?
            .min(kernels.fused_staged[1].max_threads_per_block()?);
        let staged = self.tuning.fused_staged.unwrap_or(true)
            && per_element
            && vector
            && accesses == FUSED_ACCESSES
            && threads as usize <= staged_threads.max(0) as usize
            && 2 * gs * 4 <= self.smem_per_block.saturating_sub(1024);
        let fused = || Path::Fused {
            vector,
            accesses,
            threads,
            staged,
        };
        let refuse = |what: &str| {
            Err(invalid(
                layer,
                shape,
                format!("the {what} strategy does not apply to groups of {gs} elements"),
            ))
        };
        match strategy {
            Strategy::Auto if fused_ok => Ok(fused()),
            // Groups of at most 8 slabs: one cluster each. Else the pipelined kernel when there
            // are more slabs than its buffers hold at once (something to overlap); with fewer,
            // the one-buffer kernel runs more blocks.
            Strategy::Auto => match (cluster, pipelined, slab) {
                (Some(c), _, _) => Ok(c),
                (_, Some(p @ Path::Slab { total, grid, .. }), _) if total > 2 * grid as usize => {
                    Ok(p)
                }
                (_, _, Some(s)) if !slab_reads_more(&s) => Ok(s),
                _ => three(),
            },
            Strategy::Fused if fused_ok => Ok(fused()),
            Strategy::Fused => refuse("fused"),
            Strategy::Slab => slab.map_or_else(|| refuse("slab"), Ok),
            Strategy::Pipelined => pipelined.map_or_else(|| refuse("pipelined"), Ok),
            Strategy::Cluster => cluster.map_or_else(|| refuse("cluster"), Ok),
            Strategy::ThreePass => three(),
        }
    }

    /// The cluster geometry for a plan: the fewest blocks (2, 4 or 8) whose slabs each fit a
    /// quarter of a multiprocessor's shared memory; vector plans on devices with clusters.
    fn cluster_path(
        &self,
        kernels: &Kernels,
        plan: &Plan,
        dt: DType,
        vector: bool,
    ) -> Option<Path> {
        kernels.cluster.as_ref()?;
        if !vector {
            return None;
        }
        let vec = 16 / dt.size();
        let max_elems = self.slab_max_bytes(SLAB_BLOCKS, 1) / dt.size() / vec * vec;
        let gs = plan.group_size;
        let sizes = match self.tuning.cluster {
            Some(c) => vec![c],
            None => vec![2, 4, 8],
        };
        sizes.into_iter().find_map(|cl| {
            let slab = gs.div_ceil(cl).div_ceil(vec) * vec;
            (slab <= max_elems && plan.groups * cl <= i32::MAX as usize).then_some(Path::Cluster {
                cl,
                slab,
                smem: (slab * dt.size()) as u32,
            })
        })
    }

    /// The slab geometry for a plan, when its groups fit on chip, for the one-buffer kernel or
    /// (`pipe`) the pipelined one.
    fn slab_path(
        &self,
        kernels: &Kernels,
        plan: &Plan,
        dt: DType,
        vector: bool,
        pipe: bool,
    ) -> Result<Option<Path>, NormError> {
        let vec = if vector { 16 / dt.size() } else { 1 };
        // Per-element parameters (LayerNorm) are as large as a group: the one-buffer kernel runs
        // slab j of as many groups as fit at once together, so each parameter slice is read from
        // memory once per batch and from L2 after that. The pipelined kernel (vector plans
        // without per-element parameters): producer and consumer warps over two buffers per
        // block, as many blocks per multiprocessor as its registers allow (at most PIPE_BLOCKS),
        // the shared memory split evenly among them.
        let per_element = plan.affine && plan.s == 1 && plan.b == 0;
        if pipe && (!vector || per_element) {
            return Ok(None);
        }
        let (f, threads, buffers) = if pipe {
            (&kernels.pipe[0], PIPE_THREADS, 2)
        } else {
            (&kernels.slab[vector as usize][0], BIG_THREADS, 1)
        };
        let blocks = match self.tuning.slab_blocks {
            Some(b) => b,
            None if pipe => (f.occupancy_max_active_blocks_per_multiprocessor(threads, 0, None)?
                as usize)
                .clamp(1, PIPE_BLOCKS),
            None => SLAB_BLOCKS,
        };
        let max_elems = self.slab_max_bytes(blocks, buffers) / dt.size() / vec * vec;
        if max_elems == 0 {
            return Ok(None);
        }
        let gs = plan.group_size;
        let k = gs.div_ceil(max_elems);
        let slab = gs.div_ceil(k).div_ceil(vec) * vec;
        let smem = buffers * slab * dt.size();
        let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(threads, smem, None)?;
        let resident = per_sm as usize * self.sms as usize;
        if per_sm == 0 || k > resident {
            return Ok(None);
        }
        let total = plan.groups * k;
        let m = if per_element { resident / k } else { 1 }.clamp(1, plan.groups);
        Ok(Some(Path::Slab {
            pipe,
            threads,
            vector,
            slab,
            k,
            m,
            total,
            grid: total.min(resident) as u32,
            smem: smem as u32,
        }))
    }

    /// A grid-stride grid: as many blocks of `STRIDE_THREADS` as fit on the device at once (by
    /// the kernel's occupancy and the multiprocessor count), no more than the work needs.
    fn stride_grid(&self, f: &CudaFunction, items: usize) -> Result<u32, NormError> {
        let per_sm = f
            .occupancy_max_active_blocks_per_multiprocessor(STRIDE_THREADS, 0, None)?
            .max(1);
        let full = per_sm as usize * self.sms as usize;
        Ok(items.div_ceil(STRIDE_THREADS as usize).clamp(1, full) as u32)
    }

    /// Launches a prepared layer on the stream: `y = layer(x)`, with run-time parameters taken
    /// from `bound` (tensor name, buffer). Checks, before anything is queued, that `x` and `y`
    /// are buffers of the prepared type and shape, and that every run-time parameter is bound to
    /// a buffer of the length the layer needs.
    pub fn launch(
        &self,
        p: &mut Prepared,
        x: &Buffer,
        y: &mut Buffer,
        bound: &[(&str, &Buffer)],
    ) -> Result<(), NormError> {
        let err = |m: String| invalid(&p.layer, &p.shape, m);
        for (what, b) in [("input", x), ("output", &*y)] {
            if b.dtype != p.dtype || b.len() != p.n {
                return Err(err(format!(
                    "the {what} is a {} buffer of {} elements but the layer was prepared for {} with {} elements",
                    b.dtype.name(),
                    b.len(),
                    p.dtype.name(),
                    p.n
                )));
            }
        }
        let mut tensors = Vec::new();
        for (t, len, pname) in &p.runtime {
            let b = bound
                .iter()
                .find(|(name, _)| name == t)
                .map(|(_, b)| *b)
                .ok_or_else(|| {
                    err(format!(
                        "{pname} is the run-time tensor `{t}`, which was not bound"
                    ))
                })?;
            if b.len() != *len {
                return Err(err(format!(
                    "{pname} (run-time tensor `{t}`) has {} values but {len} were expected",
                    b.len()
                )));
            }
            tensors.push((t.as_str(), b));
        }
        let find = |t: &Option<String>| {
            t.as_ref()
                .and_then(|t| tensors.iter().find(|(n, _)| *n == t).map(|(_, b)| *b))
        };
        let s = &self.stream;
        let k = &p.kernels;
        let (xp, yp) = (x.ptr(s), y.ptr(s));
        match &mut p.kind {
            Kind::Batch {
                c,
                inner,
                wide,
                planes,
                accesses,
                grid,
                threads,
                eps,
                params,
                folded,
                consts,
            } => {
                let f = k.bn_fn(folded.is_none(), *wide, *accesses, planes.is_some());
                let mut l = s.launch_builder(f);
                l.arg(&xp).arg(&yp);
                // Run-time parameters: (pointer, dtype code) of mean, var, weight and bias, 0 for
                // an absent weight or bias.
                let mut args = [(0u64, 0i32); 4];
                if let Some([scale, shift]) = folded {
                    l.arg(&*scale).arg(&*shift);
                } else {
                    for (i, param) in params.iter().enumerate() {
                        args[i] = match (param, &consts[i]) {
                            (Param::Runtime(t), _) => {
                                let b = find(&Some(t.clone())).ok_or_else(|| {
                                    err(format!("the run-time tensor `{t}` was not bound"))
                                })?;
                                (b.ptr(s), b.dtype.code())
                            }
                            (_, Some(v)) => (v.device_ptr(s).0, 0),
                            _ => (0, 0),
                        };
                    }
                    let [mean, var, weight, bias] = &args;
                    l.arg(&weight.0).arg(&weight.1).arg(&bias.0).arg(&bias.1);
                    l.arg(&mean.0)
                        .arg(&mean.1)
                        .arg(&var.0)
                        .arg(&var.1)
                        .arg(&*eps);
                }
                let (n, inner, c) = (p.n, *inner, *c);
                let (n32, i32_, c32) = (n as u32, inner as u32, c as u32);
                let (n64, i64_, c64) = (n as u64, inner as u64, c as u64);
                let pv = (inner / (16 / p.dtype.size())) as u32;
                if planes.is_some() {
                    l.arg(&pv);
                } else if *wide {
                    l.arg(&n64).arg(&i64_).arg(&c64);
                } else {
                    l.arg(&n32).arg(&i32_).arg(&c32);
                }
                // SAFETY: matches `bn_32_{1,2}` and `bn_64_2(const T*, T*, const float* scale,
                // const float* shift, I n, I inner, I C)` with folded parameters, and
                // `bn_rt_32_{1,2}` and `bn_rt_64_2(const T*, T*, u64 w, int, u64 b, int, u64
                // mean, int, u64 var, int, float eps, I n, I inner, I C)` with run-time ones,
                // with I = unsigned when n < 2^32 (`wide` false) and u64 otherwise. x and y were
                // checked to hold n elements of the module's type T and are whole cudaMalloc
                // allocations (256-byte aligned): the kernel's 16-byte accesses (each checked
                // against n / VEC) cover the first n / VEC * VEC elements and the rest is read
                // one by one. scale and shift hold C floats; every run-time pointer is a live
                // buffer of C elements of the type its code names (bound tensors were checked
                // above, constants when prepared), weight and bias may be 0 (not read); every
                // channel index is below C (the second channel of a vector across two wraps to
                // 0 after C - 1). With `planes`: `bnp_{1,2}(const T*, T*, const float*, const
                // float*, unsigned pv)` and `bnp_rt_{1,2}(.., float eps, unsigned pv)`, the
                // parameters as above, chosen only when inner is a multiple of VEC and n < 2^32:
                // the grid is (chunks, C, N) with N * C * inner = n and chunks * threads *
                // accesses >= pv = inner / VEC; block (j, c, b) touches vectors below pv of plane
                // b * C + c (16-byte aligned, inside x and y) and channel c < C.
                let grid_dim = match planes {
                    Some([chunks, c, batch]) => (*chunks, *c, *batch),
                    None => (*grid, 1, 1),
                };
                unsafe {
                    l.launch(LaunchConfig {
                        grid_dim,
                        block_dim: (*threads, 1, 1),
                        shared_mem_bytes: 0,
                    })
                }?;
            }
            Kind::Norm {
                plan,
                eps,
                params,
                path,
                part,
                sync,
                stats,
                slots,
            } => {
                let (wp, bp, pt) = params.pointers(s, k, p.dtype, &find)?;
                let (gs, a, b, sv) = (
                    plan.group_size as u32,
                    plan.a as u32,
                    plan.b as u32,
                    plan.s as u32,
                );
                let affine = plan.affine as i32;
                match *path {
                    Path::Fused {
                        vector,
                        accesses,
                        threads,
                        staged,
                    } => {
                        let (f, smem) = if staged {
                            let p_size = if pt { p.dtype.size() } else { 4 };
                            (
                                &k.fused_staged[pt as usize],
                                (2 * plan.group_size * p_size) as u32,
                            )
                        } else {
                            (k.fused_fn(vector, accesses, pt), 0)
                        };
                        let mut l = s.launch_builder(f);
                        l.arg(&xp).arg(&yp).arg(&wp).arg(&bp);
                        l.arg(&gs).arg(&a).arg(&b).arg(&sv).arg(&*eps).arg(&affine);
                        // SAFETY: matches `fused_{s,v,v8,vs}_{pf,pt}(const T*, T*, const P*,
                        // const P*, unsigned gs, unsigned A, unsigned B, unsigned S, float, int)`.
                        // One block per group (groups * gs = n elements, checked against x and
                        // y); each thread touches its `accesses` (the kernel's NA) accesses below
                        // gs, and `threads` * accesses * VEC >= gs. w and b hold param_len values
                        // of P (checked when prepared or bound), and every index (g % A) * B + p /
                        // S is below param_len by the plan. Vector accesses only when gs % VEC ==
                        // 0 and S is 1 or a multiple of VEC. `staged` only for vector plans with
                        // per-element parameters (A = 1, B = 0, S = 1, affine: param_len = gs, w
                        // and b 16-byte aligned whole allocations, so every 16-byte copy of
                        // w[p..] and b[p..] is aligned and inside), threads within the kernel's
                        // launch bounds, and `smem` = 2 * gs values of P of dynamic shared memory
                        // (w at 0, b at gs), below the maximum set when loaded.
                        unsafe {
                            l.launch(LaunchConfig {
                                grid_dim: (plan.groups as u32, 1, 1),
                                block_dim: (threads, 1, 1),
                                shared_mem_bytes: smem,
                            })
                        }?;
                    }
                    Path::Slab {
                        pipe,
                        threads,
                        vector,
                        slab,
                        k: slabs,
                        m,
                        total,
                        grid,
                        smem,
                    } => {
                        let (slab, slabs, total, groups, m) = (
                            slab as u32,
                            slabs as u32,
                            total as u32,
                            plan.groups as u32,
                            m as u32,
                        );
                        let f = if pipe {
                            &k.pipe[pt as usize]
                        } else {
                            &k.slab[vector as usize][pt as usize]
                        };
                        let mut l = s.launch_builder(f);
                        l.arg(&xp).arg(&yp).arg(&wp).arg(&bp).arg(&mut **slots);
                        l.arg(&mut *sync).arg(&gs).arg(&slab).arg(&slabs);
                        l.arg(&total).arg(&groups).arg(&m).arg(&a).arg(&b).arg(&sv);
                        l.arg(&*eps).arg(&affine);
                        // SAFETY: matches `slab_{s,v}_{pf,pt}` and `pipe_{pf,pt}(const T*, T*,
                        // const P*, const P*, u64* slots, unsigned* sync, unsigned gs, unsigned
                        // slab, unsigned k, unsigned total, unsigned groups, unsigned m, unsigned
                        // A, unsigned B, unsigned S, float, int)`. x and y hold groups * gs
                        // elements (checked); the slabs of at most `slab` elements (one buffer,
                        // or two for `pipe`) fit the `smem` bytes of dynamic shared memory
                        // (below the maximum set when loaded); vector kernels (pipe is one) only
                        // when gs and slab are multiples of VEC, so every buffer and 16-byte copy
                        // is aligned. slots holds one u64 per slab (total = groups * k), all
                        // empty before the launch, and sync 2 counters, zero (so allocated, and
                        // restored by the kernel's last block). The grid is at most the number
                        // of co-resident blocks, m * k <= that number (m = 1 for pipe), so a
                        // block waiting for its group never waits on a slab that no running
                        // block can publish (see the kernels' comments): no deadlock.
                        unsafe {
                            l.launch(LaunchConfig {
                                grid_dim: (grid, 1, 1),
                                block_dim: (threads, 1, 1),
                                shared_mem_bytes: smem,
                            })
                        }?;
                    }
                    Path::Cluster { cl, slab, smem } => {
                        let f = match &k.cluster {
                            Some(c) => &c[cl.trailing_zeros() as usize - 1][pt as usize],
                            None => return Err(err("clusters need compute capability 9.0".into())),
                        };
                        let slab32 = slab as u32;
                        let mut l = s.launch_builder(f);
                        l.arg(&xp).arg(&yp).arg(&wp).arg(&bp).arg(&gs).arg(&slab32);
                        l.arg(&a).arg(&b).arg(&sv).arg(&*eps).arg(&affine);
                        // SAFETY: matches `cluster{2,4,8}_{pf,pt}(const T*, T*, const P*, const
                        // P*, unsigned gs, unsigned slab, unsigned A, unsigned B, unsigned S,
                        // float, int)`, compiled with that cluster size: the grid is
                        // groups * cl blocks (a multiple of the cluster size, groups * cl <
                        // 2^31 checked when prepared). Block r of group g touches elements
                        // [r * slab, min((r + 1) * slab, gs)) of the group (groups * gs = n
                        // elements, checked against x and y), through a buffer of `slab`
                        // elements that fits the `smem` bytes of dynamic shared memory (below
                        // the maximum set when loaded); only vector plans (gs and slab multiples
                        // of VEC, so every 16-byte copy is aligned). Parameter indices as for
                        // the fused kernel. Blocks write only the statistics slots of their own
                        // cluster's blocks, all of which are running (clusters are scheduled
                        // whole) and wait at the cluster barrier before exiting.
                        unsafe {
                            l.launch(LaunchConfig {
                                grid_dim: ((plan.groups * cl) as u32, 1, 1),
                                block_dim: (BIG_THREADS, 1, 1),
                                shared_mem_bytes: smem,
                            })
                        }?;
                    }
                    Path::ThreePass {
                        vector,
                        columns,
                        chunks,
                        grid,
                    } => {
                        let (chunk, chunks32, groups, n32) =
                            (CHUNK as u32, chunks as u32, plan.groups as u32, p.n as u32);
                        let mut l = s.launch_builder(&k.partial[vector as usize]);
                        l.arg(&xp)
                            .arg(&mut *part)
                            .arg(&gs)
                            .arg(&chunk)
                            .arg(&chunks32);
                        // SAFETY: matches `partial_{s,v}(const T*, float*, unsigned gs,
                        // unsigned chunk, unsigned chunks)`: one block per (group, chunk), each
                        // reading inside its group of x (groups * gs = n elements, checked);
                        // part holds 3 floats per block. CHUNK is a multiple of VEC.
                        unsafe {
                            l.launch(LaunchConfig {
                                grid_dim: ((plan.groups * chunks) as u32, 1, 1),
                                block_dim: (BIG_THREADS, 1, 1),
                                shared_mem_bytes: 0,
                            })
                        }?;
                        let mut l = s.launch_builder(&k.finalize);
                        l.arg(&*part)
                            .arg(&mut *stats)
                            .arg(&groups)
                            .arg(&chunks32)
                            .arg(&*eps);
                        // SAFETY: matches `finalize(const float*, float*, unsigned, unsigned,
                        // float)`: one warp per group (warps past `groups` return), reading the
                        // group's `chunks` partials and writing 2 floats per group into `stats`
                        // (2 * groups floats).
                        unsafe {
                            l.launch(LaunchConfig {
                                grid_dim: ((plan.groups * 32).div_ceil(256) as u32, 1, 1),
                                block_dim: (256, 1, 1),
                                shared_mem_bytes: 0,
                            })
                        }?;
                        let config = LaunchConfig {
                            grid_dim: (grid, 1, 1),
                            block_dim: (STRIDE_THREADS, 1, 1),
                            shared_mem_bytes: 0,
                        };
                        if columns {
                            let f = &k.apply_cols[vector as usize][pt as usize];
                            let mut l = s.launch_builder(f);
                            l.arg(&xp).arg(&yp).arg(&*stats).arg(&wp).arg(&bp);
                            l.arg(&gs).arg(&groups);
                            // SAFETY: matches `apply_cols_{s,v}_{pf,pt}(const T*, T*, const
                            // float*, const P*, const P*, unsigned gs, unsigned groups)`:
                            // grid-stride over the gs / VEC (or gs) positions of a group, each
                            // done for every group: indices g * gs + p < n (x and y checked to hold
                            // n elements). Chosen only for per-element parameters (A = 1, B = 0,
                            // S = 1), whose w and b hold gs values of P; vectors only when gs is
                            // a multiple of VEC (aligned in x, y, w and b).
                            unsafe { l.launch(config) }?;
                            return Ok(());
                        }
                        let mut l = s.launch_builder(&k.apply[vector as usize][pt as usize]);
                        l.arg(&xp).arg(&yp).arg(&*stats).arg(&wp).arg(&bp).arg(&n32);
                        l.arg(&gs).arg(&a).arg(&b).arg(&sv).arg(&affine);
                        // SAFETY: matches `apply_{s,v}_{pf,pt}(const T*, T*, const float*,
                        // const P*, const P*, unsigned n, unsigned gs, unsigned A, unsigned B,
                        // unsigned S, int)`: grid-stride over n < 2^32 elements of x and y
                        // (checked); parameter indices as for the fused kernel.
                        unsafe {
                            l.launch(LaunchConfig {
                                grid_dim: (grid, 1, 1),
                                block_dim: (STRIDE_THREADS, 1, 1),
                                shared_mem_bytes: 0,
                            })
                        }?;
                    }
                }
            }
        }
        Ok(())
    }

    /// An empty kernel of one 32-thread block, timed like the layers ([`Gpu::time`]): the launch
    /// floor of a kernel in a CUDA graph, in milliseconds.
    pub fn floor_ms(&self, reps: usize, samples: usize) -> Result<f32, NormError> {
        let k = self.kernels(DType::F32)?;
        self.time(reps, samples, || {
            let mut l = self.stream.launch_builder(&k.empty);
            // SAFETY: `empty()` takes no arguments and touches no memory.
            unsafe {
                l.launch(LaunchConfig {
                    grid_dim: (1, 1, 1),
                    block_dim: (32, 1, 1),
                    shared_mem_bytes: 0,
                })
            }?;
            Ok(())
        })
    }

    /// Device-to-device copy of `bytes` (the bandwidth yardstick), timed like the layers
    /// ([`Gpu::time`]); returns milliseconds per copy.
    pub fn copy_ms(&self, bytes: usize, reps: usize, samples: usize) -> Result<f32, NormError> {
        let src = self.stream.alloc_zeros::<u8>(bytes)?;
        let mut dst = self.stream.alloc_zeros::<u8>(bytes)?;
        self.time(reps, samples, || {
            Ok(self.stream.memcpy_dtod(&src, &mut dst)?)
        })
    }

    /// Median milliseconds of one call of `f`: `f` is captured `reps` times into a CUDA graph,
    /// the graph is replayed once to warm up and then `samples` times, each replay timed with
    /// CUDA events, and the median replay divided by `reps`.
    pub fn time(
        &self,
        reps: usize,
        samples: usize,
        mut f: impl FnMut() -> Result<(), NormError>,
    ) -> Result<f32, NormError> {
        let s = &self.stream;
        f()?;
        s.synchronize()?;
        s.begin_capture(CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)?;
        let captured = (0..reps.max(1)).try_for_each(|_| f());
        let graph = s.end_capture(cudarc::driver::sys::CUgraphInstantiate_flags(0));
        captured?;
        let graph = graph?.ok_or(NormError::EmptyGraph)?;
        graph.launch()?;
        let flags = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let mut times = Vec::with_capacity(samples.max(1));
        for _ in 0..samples.max(1) {
            let start = s.record_event(flags)?;
            graph.launch()?;
            let end = s.record_event(flags)?;
            end.synchronize()?;
            times.push(start.elapsed_ms(&end)? / reps.max(1) as f32);
        }
        times.sort_by(f32::total_cmp);
        Ok(times[times.len() / 2])
    }
}

/// A layer validated for one input shape and storage type, with its kernels chosen and its
/// constant parameters and work buffers on the device.
pub struct Prepared {
    layer: String,
    shape: Vec<usize>,
    dtype: DType,
    n: usize,
    /// Run-time tensors: (name, expected length, parameter name).
    runtime: Vec<(String, usize, &'static str)>,
    kernels: Arc<Kernels>,
    kind: Kind,
}

impl Prepared {
    /// The kernel path in words (for benchmarks and logs): `bn vector`, `fused`, `slab k=3`, ...
    pub fn path(&self) -> String {
        match &self.kind {
            Kind::Batch {
                wide,
                planes,
                threads,
                accesses,
                ..
            } => {
                format!(
                    "batch {} {threads}t x{accesses}{}",
                    if planes.is_some() { "planes" } else { "vector" },
                    if *wide { " 64-bit" } else { "" }
                )
            }
            Kind::Norm { path, .. } => match path {
                Path::Fused {
                    vector,
                    accesses,
                    threads,
                    staged,
                } => {
                    format!(
                        "fused{} {threads}t x{accesses}{}",
                        if *vector { " vector" } else { "" },
                        if *staged { " staged" } else { "" }
                    )
                }
                Path::Cluster { cl, slab, .. } => format!("cluster vector cl={cl} slab={slab}"),
                Path::Slab {
                    pipe,
                    vector,
                    k,
                    m,
                    grid,
                    ..
                } => format!(
                    "{}{} k={k} m={m} grid={grid}",
                    if *pipe { "slab pipelined" } else { "slab" },
                    if *vector { " vector" } else { "" }
                ),
                Path::ThreePass {
                    vector,
                    columns,
                    chunks,
                    ..
                } => format!(
                    "three-pass{} chunks={chunks}{}",
                    if *vector { " vector" } else { "" },
                    if *columns { " columns" } else { "" }
                ),
            },
        }
    }
}

enum Kind {
    Batch {
        c: usize,
        inner: usize,
        wide: bool,
        /// The plane kernel on this grid: (chunks, C, N).
        planes: Option<[u32; 3]>,
        /// 16-byte accesses per thread.
        accesses: usize,
        grid: u32,
        threads: u32,
        eps: f32,
        /// mean, var, weight, bias.
        params: [Param; 4],
        /// Constant parameters folded into scale and shift (all four constant).
        folded: Option<[CudaSlice<f32>; 2]>,
        /// With a run-time parameter: the constant ones (in the order of `params`), folded by the
        /// kernel with the bound tensors.
        consts: Vec<Option<CudaSlice<f32>>>,
    },
    Norm {
        plan: Plan,
        eps: f32,
        params: NormParams,
        path: Path,
        /// Three passes: each chunk's (n, mean, m2), then each group's (mean, rstd).
        part: CudaSlice<f32>,
        stats: CudaSlice<f32>,
        /// Slabs: the ticket and finished-block counters, and each slab's published statistics.
        sync: CudaSlice<u32>,
        /// (Boxed: `Kind`'s variants stay of similar size.)
        slots: Box<CudaSlice<u64>>,
    },
}

#[derive(Debug, Clone, Copy)]
enum Path {
    Fused {
        vector: bool,
        /// Accesses per thread (2, 4 or 8; 4 for scalar plans).
        accesses: usize,
        threads: u32,
        /// Per-element parameters staged in shared memory (`fused_vs_*`).
        staged: bool,
    },
    Cluster {
        /// Blocks per cluster (2, 4 or 8): one cluster per group, one slab per block.
        cl: usize,
        slab: usize,
        smem: u32,
    },
    Slab {
        /// The pipelined kernel (two buffers per block; m = 1).
        pipe: bool,
        /// Threads per block.
        threads: u32,
        vector: bool,
        slab: usize,
        k: usize,
        /// Groups per ticket batch.
        m: usize,
        total: usize,
        grid: u32,
        smem: u32,
    },
    ThreePass {
        vector: bool,
        /// Column-order apply (per-element parameters).
        columns: bool,
        chunks: usize,
        grid: u32,
    },
}

struct NormParams {
    /// Constants (or defaults), in f32 or the tensor's type; with run-time parameters, the f32
    /// work buffers the bound values are converted into.
    w: Buffer,
    b: Buffer,
    /// Run-time tensor names of scale and bias.
    runtime: [Option<String>; 2],
    len: usize,
}

impl NormParams {
    /// Device addresses of scale and bias for a launch and whether they are stored as the
    /// tensor's type (else f32); converts bound tensors into the work buffers when needed.
    fn pointers<'b>(
        &mut self,
        s: &CudaStream,
        k: &Kernels,
        dt: DType,
        find: &impl Fn(&Option<String>) -> Option<&'b Buffer>,
    ) -> Result<(u64, u64, bool), NormError> {
        if self.runtime.iter().all(Option::is_none) {
            return Ok((self.w.ptr(s), self.b.ptr(s), self.w.dtype != DType::F32));
        }
        let bound = [find(&self.runtime[0]), find(&self.runtime[1])];
        if let [Some(w), Some(b)] = bound {
            if w.dtype == b.dtype && (w.dtype == DType::F32 || w.dtype == dt) {
                return Ok((w.ptr(s), b.ptr(s), w.dtype != DType::F32));
            }
        }
        let n = self.len as u32;
        for (src, dst) in bound.into_iter().zip([&mut self.w, &mut self.b]) {
            let Some(src) = src else { continue };
            let (sp, code, dp, fill) = (src.ptr(s), src.dtype.code(), dst.ptr(s), 0.0f32);
            let mut l = s.launch_builder(&k.to_f32);
            l.arg(&sp).arg(&code).arg(&n).arg(&fill).arg(&dp);
            // SAFETY: matches `to_f32(u64 src, int code, unsigned n, float fill, float* dst)`;
            // src is a bound buffer of n elements of the type `code` names (its length was
            // checked against the layer), dst is this layer's f32 work buffer of n floats.
            unsafe { l.launch(LaunchConfig::for_num_elems(n)) }?;
        }
        Ok((self.w.ptr(s), self.b.ptr(s), false))
    }
}
