//! A user's `dynamic_shapes` spec: the one model ([`Sheet`], with what it admits per size and
//! its printer), its reader ([`read`]), `ShapesSpec` ([`shapes`]), the user's spec bound to a
//! message ([`bind_user_spec`]) and a diagnosis merged into a spec ([`merge()`]).
//!
//! ```python
//! _h = Dim('_h', min=17, max=270)
//! h = 8*_h
//! w = Dim('w', min=135, max=3840)
//! dynamic_shapes = {"image1": {2: h, 3: w}, "image2": {2: h, 3: w}}
//! ```
//!
//! Assignments define names (plain `Dim`, derived `m*_h + r`, an int, `Dim.AUTO`, `Dim.STATIC`);
//! an optional `dynamic_shapes = {...}` dict maps inputs' dimensions (`L['x'].size()[2]`) to
//! names or inline values. Each line is read by [`crate::forms::fixes`] (the one reader of
//! `Dim(...)` lines, shared with torch's "Suggested fixes").

mod merge;
mod model;
mod read;
pub mod shapes;
mod text;
mod user;

pub use merge::merge;
pub use model::{Entry, Given, Named, Root, Sheet, Value};
pub use read::{read, sheet};
pub use user::bind_user_spec;
