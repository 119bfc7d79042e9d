//! Normalization layers with TensorRT's `INormalizationLayer` semantics, a CPU reference in f64,
//! and (feature `cuda`) GPU kernels launched through cudarc.
//!
//! A [`Norm`] normalizes over the axes of `axes` (a bitmask, bit `i` = dimension `i`), which must
//! be the trailing dimensions of the input; with `groups > 1` the channel dimension (1) is split
//! into groups and each group is normalized together with the axes (GroupNorm). Statistics use
//! the biased variance; `y = (x - mean) / sqrt(var + eps) * scale + bias`, with scale and bias
//! per channel (InstanceNorm, GroupNorm: `[C]`) or per element of the normalized shape
//! (LayerNorm). BatchNorm in inference mode ([`BatchNorm`]) is a per-channel affine map.
//!
//! Every layer is validated against the input shape before anything runs: rank, axes, group
//! count and every parameter's length, with errors that name the layer, the parameter, the
//! expected and actual count and the input shape.

#[cfg(feature = "cuda")]
pub mod bench;
pub mod engine;
#[cfg(feature = "cuda")]
pub mod gpu;

/// Errors of the normalization layers.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NormError {
    /// A layer does not fit its input.
    #[error("layer `{layer}`: {message} (input shape {shape:?})")]
    Invalid {
        /// Layer name.
        layer: String,
        /// What is wrong.
        message: String,
        /// The input shape.
        shape: Vec<usize>,
    },
    /// No usable GPU: no driver, no NVRTC, or no device.
    #[error("no GPU available: {0}")]
    NoGpu(String),
    /// A CUDA call failed.
    #[error("CUDA: {0}")]
    Cuda(String),
    /// The input shape fits no optimization profile.
    #[error("{0}")]
    Profile(String),
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
    /// Scale (empty = 1).
    pub scale: Vec<f32>,
    /// Bias (empty = 0).
    pub bias: Vec<f32>,
}

/// BatchNorm in inference mode.
#[derive(Debug, Clone, PartialEq)]
pub struct BatchNorm {
    /// Name used in errors.
    pub name: String,
    /// Running mean, per channel.
    pub mean: Vec<f32>,
    /// Running variance, per channel.
    pub var: Vec<f32>,
    /// Weight (empty = 1).
    pub weight: Vec<f32>,
    /// Bias (empty = 0).
    pub bias: Vec<f32>,
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
    /// Whether scale/bias apply.
    pub affine: bool,
}

fn invalid(layer: &str, shape: &[usize], message: String) -> NormError {
    NormError::Invalid {
        layer: layer.to_string(),
        message,
        shape: shape.to_vec(),
    }
}

impl Norm {
    /// InstanceNorm over all spatial dimensions of a rank-`rank` input.
    pub fn instance(name: &str, rank: usize, eps: f32, scale: Vec<f32>, bias: Vec<f32>) -> Norm {
        Norm::group(name, rank, 1, eps, scale, bias)
    }

    /// GroupNorm with `groups` groups.
    pub fn group(
        name: &str,
        rank: usize,
        groups: usize,
        eps: f32,
        scale: Vec<f32>,
        bias: Vec<f32>,
    ) -> Norm {
        let axes = (2..rank).fold(0, |m, d| m | (1 << d));
        Norm {
            name: name.into(),
            axes,
            groups,
            eps,
            scale,
            bias,
        }
    }

    /// LayerNorm over the last `normalized` dimensions of a rank-`rank` input.
    pub fn layer(
        name: &str,
        rank: usize,
        normalized: usize,
        eps: f32,
        scale: Vec<f32>,
        bias: Vec<f32>,
    ) -> Norm {
        let axes = (rank - normalized..rank).fold(0, |m, d| m | (1 << d));
        Norm {
            name: name.into(),
            axes,
            groups: 1,
            eps,
            scale,
            bias,
        }
    }

    /// Checks the layer against an input shape and returns what the kernels do.
    pub fn plan(&self, shape: &[usize]) -> Result<Plan, NormError> {
        let r = shape.len();
        let err = |m: String| invalid(&self.name, shape, m);
        if !(2..=5).contains(&r) {
            return Err(err(format!("input rank {r} is not supported (2 to 5)")));
        }
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
        let (groups, group_size, a, b, s, param_len, what) = if self.groups > 1 {
            if first != 2 {
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
            (
                numel / (inner * cpg),
                inner * cpg,
                self.groups,
                cpg,
                inner,
                channels,
                "channel",
            )
        } else if first >= 2 && !self.per_element(inner, channels) {
            // InstanceNorm-like: per-channel parameters.
            (
                numel / inner,
                inner,
                channels,
                1,
                inner,
                channels,
                "channel",
            )
        } else {
            // LayerNorm over dimensions first..: per-element parameters.
            (
                numel / inner,
                inner,
                1,
                0,
                1,
                inner,
                "element of the normalized shape",
            )
        };
        for (pname, p) in [("scale", &self.scale), ("bias", &self.bias)] {
            if !p.is_empty() && p.len() != param_len {
                return Err(err(format!(
                    "{pname} has {} values but {param_len} were expected (one per {what})",
                    p.len()
                )));
            }
        }
        let affine = !self.scale.is_empty() || !self.bias.is_empty();
        Ok(Plan {
            groups,
            group_size,
            a,
            b,
            s,
            affine,
        })
    }

    /// Parameters per element of the normalized shape (LayerNorm) rather than per channel: when
    /// their length is the normalized size and not the channel count.
    fn per_element(&self, inner: usize, channels: usize) -> bool {
        let len = self.scale.len().max(self.bias.len());
        len == inner && inner != channels
    }

    /// Scale and bias as full vectors (1 and 0 where not given).
    pub fn params(&self, len: usize) -> (Vec<f32>, Vec<f32>) {
        let fill = |v: &Vec<f32>, d: f32| {
            if v.is_empty() {
                vec![d; len]
            } else {
                v.clone()
            }
        };
        (fill(&self.scale, 1.0), fill(&self.bias, 0.0))
    }
}

impl BatchNorm {
    /// Checks the parameters against an input shape; returns (channels, inner size).
    pub fn plan(&self, shape: &[usize]) -> Result<(usize, usize), NormError> {
        let r = shape.len();
        if !(2..=5).contains(&r) {
            return Err(invalid(
                &self.name,
                shape,
                format!("input rank {r} is not supported (2 to 5)"),
            ));
        }
        let c = shape[1];
        for (pname, p, optional) in [
            ("running_mean", &self.mean, false),
            ("running_var", &self.var, false),
            ("weight", &self.weight, true),
            ("bias", &self.bias, true),
        ] {
            if (optional && p.is_empty()) || p.len() == c {
                continue;
            }
            return Err(invalid(
                &self.name,
                shape,
                format!(
                    "{pname} has {} values but {c} were expected (one per channel)",
                    p.len()
                ),
            ));
        }
        if let Some(v) = self.var.iter().find(|v| v.is_nan() || **v < 0.0) {
            return Err(invalid(
                &self.name,
                shape,
                format!("running_var holds {v}; variances must be >= 0"),
            ));
        }
        Ok((c, shape[2..].iter().product()))
    }

    /// Per-channel `(scale, shift)` with `y = x * scale + shift`, folded in f64.
    pub fn folded(&self) -> (Vec<f32>, Vec<f32>) {
        (0..self.mean.len())
            .map(|c| {
                let w = self.weight.get(c).copied().unwrap_or(1.0) as f64;
                let b = self.bias.get(c).copied().unwrap_or(0.0) as f64;
                let sc = w / (self.var[c] as f64 + self.eps as f64).sqrt();
                (sc as f32, (b - self.mean[c] as f64 * sc) as f32)
            })
            .unzip()
    }
}

impl Layer {
    /// Validates the layer for an input shape.
    pub fn check(&self, shape: &[usize]) -> Result<(), NormError> {
        match self {
            Layer::Norm(n) => n.plan(shape).map(|_| ()),
            Layer::Batch(b) => b.plan(shape).map(|_| ()),
        }
    }
}

/// The CPU reference, in f64 (two-pass statistics).
pub fn reference(layer: &Layer, shape: &[usize], x: &[f64]) -> Result<Vec<f64>, NormError> {
    match layer {
        Layer::Batch(bn) => {
            let (c, inner) = bn.plan(shape)?;
            Ok(x.iter()
                .enumerate()
                .map(|(i, &v)| {
                    let ch = (i / inner) % c;
                    let w = bn.weight.get(ch).copied().unwrap_or(1.0) as f64;
                    let b = bn.bias.get(ch).copied().unwrap_or(0.0) as f64;
                    (v - bn.mean[ch] as f64) / (bn.var[ch] as f64 + bn.eps as f64).sqrt() * w + b
                })
                .collect())
        }
        Layer::Norm(n) => {
            let p = n.plan(shape)?;
            let mut y = vec![0.0; x.len()];
            for g in 0..p.groups {
                let xs = &x[g * p.group_size..(g + 1) * p.group_size];
                let mean = xs.iter().sum::<f64>() / p.group_size as f64;
                let var =
                    xs.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / p.group_size as f64;
                let rstd = 1.0 / (var + n.eps as f64).sqrt();
                for (k, v) in xs.iter().enumerate() {
                    let q = (g % p.a) * p.b + k / p.s;
                    let w = n.scale.get(q).copied().unwrap_or(1.0) as f64;
                    let b = n.bias.get(q).copied().unwrap_or(0.0) as f64;
                    y[g * p.group_size + k] = (v - mean) * rstd * w + b;
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
        let bn = BatchNorm {
            name: "bn".into(),
            mean: vec![0.0; 64],
            var: vec![1.0; 64],
            weight: vec![],
            bias: vec![0.0; 16],
            eps: 1e-5,
        };
        let e = bn.plan(&[2, 64, 8, 8]).unwrap_err().to_string();
        assert!(e.contains("bias has 16 values but 64 were expected"), "{e}");
        let g = Norm::group("gn", 4, 6, 1e-5, vec![], vec![]);
        assert!(g
            .plan(&[1, 64, 4, 4])
            .unwrap_err()
            .to_string()
            .contains("6 groups do not divide 64 channels"));
        let bad = Norm {
            name: "x".into(),
            axes: 0b0110,
            groups: 1,
            eps: 1e-5,
            scale: vec![],
            bias: vec![],
        };
        assert!(bad
            .plan(&[1, 2, 3, 4])
            .unwrap_err()
            .to_string()
            .contains("trailing"));
        assert!(Norm::layer("ln", 6, 1, 1e-5, vec![], vec![])
            .plan(&[1; 6])
            .is_err());
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
        assert_eq!((p.groups, p.group_size), (8, 64 * 256 * 256));
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
        let y = reference(&g, &[1, 4, 2], &x).unwrap();
        let std = (1.25f64).sqrt(); // values 0..3: mean 1.5, biased variance 1.25
        assert!((y[0] - (-1.5 / std)).abs() < 1e-12);
        assert!((y[2] - 2.0 * (0.5 / std)).abs() < 1e-12);
        assert!((y[7] - (4.0 * (1.5 / std) + 1.0)).abs() < 1e-12);
    }
}
