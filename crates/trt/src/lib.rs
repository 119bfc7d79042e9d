//! # dimguard-trt
//!
//! TensorRT optimization profiles whose every min, opt and max shape is a size the exported
//! program accepts ([`profile`]), written for trtexec, Polygraphy, `torch_tensorrt` and as JSON
//! ([`emit`]). The normalization layers and their GPU kernels live in `dimguard-norm`.

pub mod emit;
pub mod profile;

pub use profile::{DimKind, InputSpec, Profile, ProfileSet, Triple};
