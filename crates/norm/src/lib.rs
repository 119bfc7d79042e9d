//! # dimguard-norm
//!
//! Normalization layers with TensorRT's `INormalizationLayer` semantics, a CPU reference in f64,
//! and GPU kernels launched through cudarc ([`gpu`]; dynamic loading, so the crate builds and its
//! CPU tests run on machines without CUDA), a small engine with optimization profiles
//! ([`engine`]) and the benchmark behind `dimguard norm-bench` ([`bench`](mod@bench)).
//!
//! A [`Norm`] normalizes over the axes of `axes` (a bitmask, bit `i` = dimension `i`), which must
//! be the trailing dimensions of the input; with `groups > 1` the channel dimension (1) is split
//! into groups and each group is normalized together with the axes (GroupNorm). Statistics use
//! the biased variance; `y = (x - mean) / sqrt(var + eps) * scale + bias`, with scale and bias
//! per channel (InstanceNorm, GroupNorm: `[C]`) or per element of the normalized shape
//! (LayerNorm). BatchNorm in inference mode ([`BatchNorm`]) is a per-channel affine map.
//!
//! Every parameter is a [`Param`]: absent, constants (uploaded once when the layer is prepared)
//! or a run-time tensor named in the layer and bound to a device buffer at each launch (as
//! TensorRT's `ITensor` parameters: values another layer or the host produced just before).
//! Every layer is validated against the input shape before anything runs: rank, axes, group
//! count and every parameter's length (constants when prepared, bound buffers at each launch),
//! with errors that name the layer, the parameter, the expected and actual count and the input
//! shape.

pub mod bench;
pub mod engine;
pub mod gpu;
pub mod half;
mod layer;

pub use gpu::{Buffer, Gpu, Prepared, Strategy};
pub use layer::{reference, Affine, BatchNorm, DType, Layer, NoGpu, Norm, NormError, Param, Plan};
