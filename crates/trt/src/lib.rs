//! # dimguard-trt
//!
//! TensorRT optimization profiles whose every min, opt and max shape is a size the exported
//! program accepts ([`profile`]), written for trtexec, Polygraphy, `torch_tensorrt` and as JSON
//! ([`emit`]); and normalization layers with TensorRT's `INormalizationLayer` semantics, with a
//! CPU reference and (feature `cuda`) GPU kernels through cudarc ([`norm`]).

pub mod emit;
pub mod norm;
pub mod profile;

pub use profile::{DimKind, InputSpec, Profile, ProfileSet, Triple};
