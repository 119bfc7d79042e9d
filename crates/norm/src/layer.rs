//! The layers (their parameters, validation against an input shape and launch plan), the
//! errors of the crate, and the CPU reference every kernel is checked against. The crate root
//! re-exports them.

/// Errors of the normalization layers, the GPU and the engine.
#[derive(Debug, thiserror::Error)]
pub enum NormError {
    /// A layer does not fit its input, or a buffer does not fit the layer.
    #[error("layer `{layer}`: {message} (input shape {shape:?})")]
    Invalid {
        /// Layer name.
        layer: String,
        /// What is wrong, with the expected and actual values.
        message: String,
        /// The input shape.
        shape: Vec<usize>,
    },
    /// No usable GPU: no driver, no NVRTC, or no device.
    #[error("no GPU available: {0}")]
    NoGpu(#[from] NoGpu),
    /// A captured CUDA graph held no work to time.
    #[error("the captured CUDA graph is empty")]
    EmptyGraph,
    /// A results file could not be written.
    #[error("cannot write {}: {source}", path.display())]
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A CUDA driver call failed.
    #[error("CUDA driver: {0}")]
    Driver(#[from] cudarc::driver::DriverError),
    /// NVRTC could not compile the kernels.
    #[error("NVRTC: {0}")]
    Compile(#[from] cudarc::nvrtc::CompileError),
    /// The input shape fits no optimization profile (what to do is in the message).
    #[error(transparent)]
    Profile(#[from] dimguard_trt::profile::Error),
}

/// Why there is no usable GPU (kept for the process: [`crate::gpu::Gpu::get`] looks once).
#[derive(Debug, Clone, thiserror::Error)]
pub enum NoGpu {
    /// The CUDA driver library is not installed.
    #[error("the CUDA driver library (libcuda) was not found")]
    NoDriver,
    /// NVRTC is not installed.
    #[error("NVRTC (libnvrtc) was not found")]
    NoNvrtc,
    /// A driver call while opening the device failed.
    #[error("{what}: {message}")]
    Driver {
        /// The step: `no usable CUDA device`, `cannot create a stream`, ...
        what: &'static str,
        /// The driver's error.
        message: String,
    },
    /// The device is older than the kernels need.
    #[error("compute capability {major}.{minor} is too old (7.0 or newer is needed)")]
    TooOld {
        /// Compute capability, major.
        major: i32,
        /// Compute capability, minor.
        minor: i32,
    },
}

/// Storage type of the tensors (statistics always accumulate in fp32).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DType {
    /// 32-bit float.
    F32,
    /// IEEE half.
    F16,
    /// bfloat16.
    BF16,
}

impl DType {
    /// Every storage type.
    pub const ALL: [DType; 3] = [DType::F32, DType::F16, DType::BF16];

    /// Bytes per element.
    pub fn size(self) -> usize {
        if self == DType::F32 {
            4
        } else {
            2
        }
    }

    /// Name as in tables.
    pub fn name(self) -> &'static str {
        match self {
            DType::F32 => "fp32",
            DType::F16 => "fp16",
            DType::BF16 => "bf16",
        }
    }

    /// The kernels' code for the type (`DG_DTYPE`, and the run-time parameter loaders).
    pub(crate) fn code(self) -> i32 {
        match self {
            DType::F32 => 0,
            DType::F16 => 1,
            DType::BF16 => 2,
        }
    }
}

/// A parameter vector of a layer.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum Param {
    /// Not given: 1 for a scale or weight, 0 for a bias (running mean and variance are required).
    #[default]
    Absent,
    /// Values known when the layer is built, uploaded once when it is prepared.
    Const(Vec<f32>),
    /// A run-time tensor: the name of a device buffer bound at each launch (any storage type;
    /// its length is checked at every launch).
    Runtime(String),
}

impl From<Vec<f32>> for Param {
    /// Constants; an empty vector means absent.
    fn from(v: Vec<f32>) -> Param {
        if v.is_empty() {
            Param::Absent
        } else {
            Param::Const(v)
        }
    }
}

impl Param {
    /// A run-time tensor bound by `name` at launch.
    pub fn runtime(name: &str) -> Param {
        Param::Runtime(name.to_string())
    }

    fn is_absent(&self) -> bool {
        matches!(self, Param::Absent)
    }

    /// Value `i` of constants (`default` when absent). Run-time values come from `bound`;
    /// one it lacks is an error of `layer` at input `shape`.
    fn value(
        &self,
        i: usize,
        default: f32,
        bound: &[(&str, &[f32])],
        layer: &str,
        shape: &[usize],
    ) -> Result<f32, NormError> {
        match self {
            Param::Absent => Ok(default),
            Param::Const(v) => Ok(v[i]),
            Param::Runtime(name) => bound
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v[i])
                .ok_or_else(|| {
                    invalid(
                        layer,
                        shape,
                        format!("the run-time tensor `{name}` was not bound"),
                    )
                }),
        }
    }
}

/// How the scale and bias of a [`Norm`] are laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Affine {
    /// One value per channel (`[C]`): InstanceNorm, GroupNorm.
    PerChannel,
    /// One value per element of the normalized shape: LayerNorm.
    PerElement,
}

/// TensorRT's normalization layer.
#[derive(Debug, Clone, PartialEq)]
pub struct Norm {
    /// Name used in errors.
    pub name: String,
    /// Normalized axes (bit `i` = dimension `i`); must be trailing.
    pub axes: u32,
    /// Channel groups (1 = none).
    pub groups: usize,
    /// Added to the variance.
    pub eps: f32,
    /// Layout of scale and bias.
    pub affine: Affine,
    /// Scale.
    pub scale: Param,
    /// Bias.
    pub bias: Param,
}

/// BatchNorm in inference mode.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchNorm {
    /// Name used in errors.
    pub name: String,
    /// Running mean, per channel (required).
    pub mean: Param,
    /// Running variance, per channel (required).
    pub var: Param,
    /// Weight.
    pub weight: Param,
    /// Bias.
    pub bias: Param,
    /// Added to the variance.
    pub eps: f32,
}

/// A layer of a small normalization network.
#[derive(Debug, Clone, PartialEq)]
pub enum Layer {
    /// InstanceNorm / GroupNorm / LayerNorm.
    Norm(Norm),
    /// BatchNorm (inference).
    Batch(BatchNorm),
}

/// What a validated [`Norm`] does to a tensor: contiguous groups of `group_size` elements, and
/// parameter index `(g % a) * b + p / s` for element `p` of group `g`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Number of groups.
    pub groups: usize,
    /// Elements per group.
    pub group_size: usize,
    /// Parameter index: `(g % a) * b + p / s`.
    pub a: usize,
    /// See `a`.
    pub b: usize,
    /// See `a`.
    pub s: usize,
    /// Length of scale and bias.
    pub param_len: usize,
    /// Whether scale/bias apply.
    pub affine: bool,
}

pub(crate) fn invalid(layer: &str, shape: &[usize], message: String) -> NormError {
    NormError::Invalid {
        layer: layer.to_string(),
        message,
        shape: shape.to_vec(),
    }
}

fn check_rank(layer: &str, shape: &[usize]) -> Result<(), NormError> {
    let r = shape.len();
    if !(2..=5).contains(&r) {
        return Err(invalid(
            layer,
            shape,
            format!("input rank {r} is not supported (2 to 5)"),
        ));
    }
    if let Some(d) = shape.iter().position(|&d| d == 0) {
        return Err(invalid(
            layer,
            shape,
            format!("dimension {d} is 0: an empty tensor has nothing to normalize"),
        ));
    }
    Ok(())
}

/// Checks the length of constants; run-time tensors are checked when bound.
fn check_len(
    layer: &str,
    shape: &[usize],
    pname: &str,
    p: &Param,
    len: usize,
    what: &str,
) -> Result<(), NormError> {
    if let Param::Const(v) = p {
        if v.len() != len {
            return Err(invalid(
                layer,
                shape,
                format!(
                    "{pname} has {} values but {len} were expected (one per {what})",
                    v.len()
                ),
            ));
        }
    }
    Ok(())
}

impl Norm {
    /// InstanceNorm over all spatial dimensions of a rank-`rank` input (per-channel affine).
    pub fn instance(
        name: &str,
        rank: usize,
        eps: f32,
        scale: impl Into<Param>,
        bias: impl Into<Param>,
    ) -> Norm {
        Norm::group(name, rank, 1, eps, scale, bias)
    }

    /// GroupNorm with `groups` groups (per-channel affine).
    pub fn group(
        name: &str,
        rank: usize,
        groups: usize,
        eps: f32,
        scale: impl Into<Param>,
        bias: impl Into<Param>,
    ) -> Norm {
        let axes = (2..rank).fold(0, |m, d| m | (1 << d));
        Norm {
            name: name.into(),
            axes,
            groups,
            eps,
            affine: Affine::PerChannel,
            scale: scale.into(),
            bias: bias.into(),
        }
    }

    /// LayerNorm over the last `normalized` dimensions of a rank-`rank` input (per-element
    /// affine over the normalized shape).
    pub fn layer(
        name: &str,
        rank: usize,
        normalized: usize,
        eps: f32,
        scale: impl Into<Param>,
        bias: impl Into<Param>,
    ) -> Norm {
        let axes = (rank.saturating_sub(normalized)..rank).fold(0, |m, d| m | (1 << d));
        Norm {
            name: name.into(),
            axes,
            groups: 1,
            eps,
            affine: Affine::PerElement,
            scale: scale.into(),
            bias: bias.into(),
        }
    }

    /// Checks the layer against an input shape and returns what the kernels do.
    pub fn plan(&self, shape: &[usize]) -> Result<Plan, NormError> {
        check_rank(&self.name, shape)?;
        let r = shape.len();
        let err = |m: String| invalid(&self.name, shape, m);
        if self.axes == 0 || self.axes >> r != 0 {
            return Err(err(format!(
                "axes mask {:#b} names no dimension or one beyond rank {r}",
                self.axes
            )));
        }
        let first = self.axes.trailing_zeros() as usize;
        let trailing = (first..r).fold(0u32, |m, d| m | (1 << d));
        if self.axes != trailing {
            return Err(err(format!(
                "axes mask {:#b} is not supported: the normalized axes must be the trailing dimensions ({first}..{r})",
                self.axes
            )));
        }
        if !self.eps.is_finite() || self.eps < 0.0 {
            return Err(err(format!(
                "eps must be finite and >= 0, got {}",
                self.eps
            )));
        }
        let numel: usize = shape.iter().product();
        let inner: usize = shape[first..].iter().product();
        let channels = shape[1];
        if self.groups == 0 {
            return Err(err("groups must be at least 1".into()));
        }
        if self.groups > 1 && first != 2 {
            return Err(err(format!(
                "groups ({}) need the axes to be 2..{r}",
                self.groups
            )));
        }
        if channels % self.groups != 0 {
            return Err(err(format!(
                "{} groups do not divide {channels} channels",
                self.groups
            )));
        }
        let cpg = channels / self.groups;
        // With groups, a group spans its channels' normalized axes.
        let group_size = if self.groups > 1 { inner * cpg } else { inner };
        let (a, b, s, param_len, what) = match self.affine {
            Affine::PerChannel if first != 2 => {
                return Err(err(format!(
                    "per-channel scale and bias need the normalized axes to be 2..{r} (they are {first}..{r})"
                )))
            }
            Affine::PerChannel if self.groups > 1 => (self.groups, cpg, inner, channels, "channel"),
            Affine::PerChannel => (channels, 1, inner, channels, "channel"),
            Affine::PerElement if self.groups > 1 => {
                return Err(err(
                    "per-element scale and bias are not supported with groups".into()
                ))
            }
            Affine::PerElement => (1, 0, 1, inner, "element of the normalized shape"),
        };
        if group_size > u32::MAX as usize || numel > u32::MAX as usize {
            return Err(err(format!(
                "{numel} elements: tensors of 2^32 elements or more are not supported"
            )));
        }
        check_len(&self.name, shape, "scale", &self.scale, param_len, what)?;
        check_len(&self.name, shape, "bias", &self.bias, param_len, what)?;
        Ok(Plan {
            groups: numel / group_size,
            group_size,
            a,
            b,
            s,
            param_len,
            affine: !self.scale.is_absent() || !self.bias.is_absent(),
        })
    }
}

impl BatchNorm {
    /// BatchNorm with every parameter given.
    pub fn new(
        name: &str,
        mean: impl Into<Param>,
        var: impl Into<Param>,
        weight: impl Into<Param>,
        bias: impl Into<Param>,
        eps: f32,
    ) -> BatchNorm {
        BatchNorm {
            name: name.into(),
            mean: mean.into(),
            var: var.into(),
            weight: weight.into(),
            bias: bias.into(),
            eps,
        }
    }

    /// The parameters with their names as in errors and their defaults (None: required).
    pub(crate) fn params(&self) -> [(&'static str, &Param, Option<f32>); 4] {
        [
            ("running_mean", &self.mean, None),
            ("running_var", &self.var, None),
            ("weight", &self.weight, Some(1.0)),
            ("bias", &self.bias, Some(0.0)),
        ]
    }

    /// Checks the parameters against an input shape; returns (channels, inner size).
    pub fn plan(&self, shape: &[usize]) -> Result<(usize, usize), NormError> {
        check_rank(&self.name, shape)?;
        let c = shape[1];
        if !self.eps.is_finite() || self.eps < 0.0 {
            return Err(invalid(
                &self.name,
                shape,
                format!("eps must be finite and >= 0, got {}", self.eps),
            ));
        }
        for (pname, p, default) in self.params() {
            if default.is_none() && p.is_absent() {
                return Err(invalid(
                    &self.name,
                    shape,
                    format!("{pname} is required ({c} values, one per channel)"),
                ));
            }
            check_len(&self.name, shape, pname, p, c, "channel")?;
        }
        if let Param::Const(var) = &self.var {
            if let Some(v) = var.iter().find(|v| v.is_nan() || **v < 0.0) {
                return Err(invalid(
                    &self.name,
                    shape,
                    format!("running_var holds {v}; variances must be >= 0"),
                ));
            }
        }
        Ok((c, shape[2..].iter().product()))
    }

    /// Per-channel `(scale, shift)` with `y = x * scale + shift`, folded in f64, when every
    /// parameter is constant.
    pub fn folded(&self, c: usize) -> Option<(Vec<f32>, Vec<f32>)> {
        let values = |p: &Param, d: f32| match p {
            Param::Absent => Some(vec![d as f64; c]),
            Param::Const(v) => Some(v.iter().map(|&x| x as f64).collect::<Vec<_>>()),
            Param::Runtime(_) => None,
        };
        let (m, v) = (values(&self.mean, 0.0)?, values(&self.var, 1.0)?);
        let (w, b) = (values(&self.weight, 1.0)?, values(&self.bias, 0.0)?);
        Some(
            (0..c)
                .map(|i| {
                    let sc = w[i] / (v[i] + self.eps as f64).sqrt();
                    (sc as f32, (b[i] - m[i] * sc) as f32)
                })
                .unzip(),
        )
    }
}

impl Layer {
    /// The layer's name.
    pub fn name(&self) -> &str {
        match self {
            Layer::Norm(n) => &n.name,
            Layer::Batch(b) => &b.name,
        }
    }

    /// Validates the layer for an input shape.
    pub fn check(&self, shape: &[usize]) -> Result<(), NormError> {
        match self {
            Layer::Norm(n) => n.plan(shape).map(|_| ()),
            Layer::Batch(b) => b.plan(shape).map(|_| ()),
        }
    }

    /// The run-time tensors the layer reads, with the number of values each must hold for an
    /// input of `shape` and the parameter's name.
    pub fn runtime_params(
        &self,
        shape: &[usize],
    ) -> Result<Vec<(String, usize, &'static str)>, NormError> {
        let mut out = Vec::new();
        match self {
            Layer::Norm(n) => {
                let p = n.plan(shape)?;
                for (pname, param) in [("scale", &n.scale), ("bias", &n.bias)] {
                    if let Param::Runtime(t) = param {
                        out.push((t.clone(), p.param_len, pname));
                    }
                }
            }
            Layer::Batch(b) => {
                let (c, _) = b.plan(shape)?;
                for (pname, param, _) in b.params() {
                    if let Param::Runtime(t) = param {
                        out.push((t.clone(), c, pname));
                    }
                }
            }
        }
        Ok(out)
    }
}

/// The CPU reference, in f64 (two-pass statistics). `bound` gives the values of run-time
/// parameters by tensor name (as stored on the device).
pub fn reference(
    layer: &Layer,
    shape: &[usize],
    x: &[f64],
    bound: &[(&str, &[f32])],
) -> Result<Vec<f64>, NormError> {
    let n: usize = shape.iter().product();
    let name = layer.name();
    if x.len() != n {
        return Err(invalid(
            name,
            shape,
            format!("{} input values given but the shape has {n}", x.len()),
        ));
    }
    for (t, len, pname) in layer.runtime_params(shape)? {
        match bound.iter().find(|(b, _)| *b == t) {
            None => {
                return Err(invalid(
                    name,
                    shape,
                    format!("{pname} is the run-time tensor `{t}`, which was not bound"),
                ))
            }
            Some((_, v)) if v.len() != len => {
                return Err(invalid(
                    name,
                    shape,
                    format!(
                        "{pname} (run-time tensor `{t}`) has {} values but {len} were expected",
                        v.len()
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    let get = |p: &Param, i: usize, d: f32| -> Result<f64, NormError> {
        p.value(i, d, bound, name, shape).map(f64::from)
    };
    match layer {
        Layer::Batch(bn) => {
            let (c, inner) = bn.plan(shape)?;
            let mut ch = Vec::with_capacity(c);
            for k in 0..c {
                let (m, v) = (get(&bn.mean, k, 0.0)?, get(&bn.var, k, 1.0)?);
                let (w, b) = (get(&bn.weight, k, 1.0)?, get(&bn.bias, k, 0.0)?);
                ch.push((m, (v + bn.eps as f64).sqrt(), w, b));
            }
            Ok(x.iter()
                .enumerate()
                .map(|(i, &v)| {
                    let (m, sd, w, b) = ch[(i / inner) % c];
                    (v - m) / sd * w + b
                })
                .collect())
        }
        Layer::Norm(nm) => {
            let p = nm.plan(shape)?;
            let mut w = Vec::with_capacity(p.param_len);
            let mut b = Vec::with_capacity(p.param_len);
            for q in 0..p.param_len {
                w.push(get(&nm.scale, q, 1.0)?);
                b.push(get(&nm.bias, q, 0.0)?);
            }
            let mut y = vec![0.0; x.len()];
            for g in 0..p.groups {
                let xs = &x[g * p.group_size..(g + 1) * p.group_size];
                let mean = xs.iter().sum::<f64>() / p.group_size as f64;
                let var =
                    xs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / p.group_size as f64;
                let rstd = 1.0 / (var + nm.eps as f64).sqrt();
                for (k, v) in xs.iter().enumerate() {
                    let q = (g % p.a) * p.b + k / p.s;
                    y[g * p.group_size + k] = (v - mean) * rstd * w[q] + b[q];
                }
            }
            Ok(y)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_names_layer_parameter_and_counts() {
        let n = Norm::instance("in1", 4, 1e-5, vec![1.0; 16], vec![]);
        let e = n.plan(&[2, 64, 8, 8]).unwrap_err().to_string();
        assert_eq!(e, "layer `in1`: scale has 16 values but 64 were expected (one per channel) (input shape [2, 64, 8, 8])");
        let bn = BatchNorm::new(
            "bn",
            vec![0.0; 64],
            vec![1.0; 64],
            vec![],
            vec![0.0; 16],
            1e-5,
        );
        let e = bn.plan(&[2, 64, 8, 8]).unwrap_err().to_string();
        assert!(e.contains("bias has 16 values but 64 were expected"), "{e}");
        let bn = BatchNorm::new("bn", vec![], vec![1.0; 64], vec![], vec![], 1e-5);
        let e = bn.plan(&[2, 64, 8, 8]).unwrap_err().to_string();
        assert!(e.contains("running_mean is required (64 values"), "{e}");
        let g = Norm::group("gn", 4, 6, 1e-5, vec![], vec![]);
        assert!(g
            .plan(&[1, 64, 4, 4])
            .unwrap_err()
            .to_string()
            .contains("6 groups do not divide 64 channels"));
        let mut bad = Norm::layer("x", 4, 2, 1e-5, vec![], vec![]);
        bad.axes = 0b0110;
        assert!(bad
            .plan(&[1, 2, 3, 4])
            .unwrap_err()
            .to_string()
            .contains("trailing"));
        assert!(Norm::layer("ln", 6, 1, 1e-5, vec![], vec![])
            .plan(&[1; 6])
            .is_err());
        let e = Norm::instance("in", 4, 1e-5, vec![], vec![])
            .plan(&[1, 0, 3, 3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("dimension 1 is 0"), "{e}");
        let mut zero = Norm::group("gz", 4, 0, 1e-5, vec![], vec![]);
        assert!(zero.plan(&[1, 4, 2, 2]).is_err());
        zero.groups = 2;
        zero.affine = Affine::PerElement;
        assert!(zero.plan(&[1, 4, 2, 2]).is_err());
    }

    #[test]
    fn plans_for_each_layer() {
        let p = Norm::group("gn", 4, 8, 1e-5, vec![], vec![])
            .plan(&[2, 64, 3, 5])
            .unwrap();
        assert_eq!(
            (p.groups, p.group_size, p.a, p.b, p.s),
            (16, 8 * 15, 8, 8, 15)
        );
        let p = Norm::layer("ln", 2, 1, 1e-5, vec![1.0; 4096], vec![])
            .plan(&[4096, 4096])
            .unwrap();
        assert_eq!(
            (p.groups, p.group_size, p.a, p.b, p.s),
            (4096, 4096, 1, 0, 1)
        );
        let p = Norm::layer("ln", 4, 3, 1e-5, vec![], vec![])
            .plan(&[8, 64, 256, 256])
            .unwrap();
        assert_eq!(
            (p.groups, p.group_size, p.affine),
            (8, 64 * 256 * 256, false)
        );
        // LayerNorm over (H, W) with per-element parameters, told apart from InstanceNorm by
        // the layout, not by the parameters' length.
        let p = Norm::layer("ln_hw", 4, 2, 1e-5, Param::runtime("w"), vec![])
            .plan(&[2, 3, 4, 5])
            .unwrap();
        assert_eq!((p.a, p.b, p.s, p.param_len), (1, 0, 1, 20));
    }

    #[test]
    fn runtime_parameters_are_listed_and_checked_in_the_reference() {
        let bn = Layer::Batch(BatchNorm::new(
            "bn",
            Param::runtime("m"),
            Param::runtime("v"),
            vec![2.0; 3],
            vec![],
            0.0,
        ));
        let shape = [1, 3, 2];
        assert_eq!(
            bn.runtime_params(&shape).unwrap(),
            vec![
                ("m".to_string(), 3, "running_mean"),
                ("v".to_string(), 3, "running_var")
            ]
        );
        let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
        let e = reference(&bn, &shape, &x, &[("m", &[0.0; 3])])
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("running_var is the run-time tensor `v`, which was not bound"),
            "{e}"
        );
        let e = reference(&bn, &shape, &x, &[("m", &[0.0; 3]), ("v", &[1.0; 2])])
            .unwrap_err()
            .to_string();
        assert!(e.contains("has 2 values but 3 were expected"), "{e}");
        let y = reference(&bn, &shape, &x, &[("m", &[1.0; 3]), ("v", &[4.0; 3])]).unwrap();
        assert_eq!(y, vec![0.0, 1.0, 2.0, 3.0, 4.0, 5.0]);
    }

    #[test]
    fn reference_matches_the_definition() {
        // GroupNorm with 2 groups on [1, 4, 2]: groups are channels {0,1} and {2,3}.
        let x: Vec<f64> = (0..8).map(|i| i as f64).collect();
        let g = Layer::Norm(Norm::group(
            "gn",
            3,
            2,
            0.0,
            vec![1.0, 2.0, 3.0, 4.0],
            vec![0.0, 0.0, 0.0, 1.0],
        ));
        let y = reference(&g, &[1, 4, 2], &x, &[]).unwrap();
        let std = (1.25f64).sqrt(); // values 0..3: mean 1.5, biased variance 1.25
        assert!((y[0] - (-1.5 / std)).abs() < 1e-12);
        assert!((y[2] - 2.0 * (0.5 / std)).abs() < 1e-12);
        assert!((y[7] - (4.0 * (1.5 / std) + 1.0)).abs() < 1e-12);
    }
}
