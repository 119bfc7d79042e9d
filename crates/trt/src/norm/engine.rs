//! A small engine: a chain of normalization layers with optimization profiles. `execute`
//! validates the input shape against the profiles (the actionable error of `ProfileSet::select`)
//! before anything runs, then runs the layers on the GPU's stream.

use super::{Layer, NormError};
use crate::profile::ProfileSet;

/// Layers applied in order to one input.
pub struct Engine {
    /// The input's name in the profiles.
    pub input: String,
    /// The layers.
    pub layers: Vec<Layer>,
    /// Optimization profiles for the input.
    pub profiles: ProfileSet,
}

impl Engine {
    /// Builds an engine; every layer must accept every profile's min, opt and max shapes.
    pub fn new(input: &str, layers: Vec<Layer>, profiles: ProfileSet) -> Result<Engine, NormError> {
        for p in &profiles.profiles {
            let t = p
                .inputs
                .iter()
                .find(|(n, _)| n == input)
                .map(|(_, t)| t)
                .ok_or_else(|| {
                    NormError::Profile(format!("the profiles have no input `{input}`"))
                })?;
            for shape in [&t.min, &t.opt, &t.max] {
                let s: Vec<usize> = shape.iter().map(|&v| v as usize).collect();
                for l in &layers {
                    l.check(&s)?;
                }
            }
        }
        Ok(Engine {
            input: input.to_string(),
            layers,
            profiles,
        })
    }

    /// The profile serving `shape`, or why none does (nothing runs then).
    pub fn select(&self, shape: &[usize]) -> Result<usize, NormError> {
        let s: Vec<i128> = shape.iter().map(|&v| v as i128).collect();
        self.profiles
            .select(&[(self.input.as_str(), s)])
            .map_err(|e| NormError::Profile(e.to_string()))
    }

    /// Runs every layer on `x` (f32 host values of `shape`, stored as `dt` on the device) and
    /// returns the result.
    #[cfg(feature = "cuda")]
    pub fn execute(
        &self,
        shape: &[usize],
        dt: super::DType,
        x: &[f32],
    ) -> Result<Vec<f32>, NormError> {
        self.select(shape)?;
        let n: usize = shape.iter().product();
        if x.len() != n {
            return Err(NormError::Profile(format!(
                "{} values given for shape {shape:?} ({n} expected)",
                x.len()
            )));
        }
        let g = super::gpu::Gpu::get()?;
        let mut cur = g.upload(dt, x)?;
        for l in &self.layers {
            let mut next = g.poisoned(dt, n)?;
            g.run(l, shape, dt, &cur, &mut next)?;
            cur = next;
        }
        g.download(dt, &cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::norm::{reference, BatchNorm, Norm};
    use crate::profile::{DimKind, InputSpec};
    use dimguard_solver::DimSet;

    fn engine() -> Engine {
        let inputs = vec![InputSpec {
            name: "x".into(),
            dims: vec![
                DimKind::Static(2),
                DimKind::Static(8),
                DimKind::Dynamic {
                    accepted: DimSet::progression(16, 256, 16, 0),
                    example: Some(64),
                },
                DimKind::Static(32),
            ],
        }];
        let profiles = ProfileSet::build(&inputs, 1).unwrap();
        let layers = vec![
            Layer::Batch(BatchNorm {
                name: "bn".into(),
                mean: vec![0.5; 8],
                var: vec![2.0; 8],
                weight: vec![],
                bias: vec![],
                eps: 1e-5,
            }),
            Layer::Norm(Norm::group("gn", 4, 4, 1e-5, vec![1.5; 8], vec![0.1; 8])),
            Layer::Norm(Norm::layer("ln", 4, 1, 1e-5, vec![], vec![])),
        ];
        Engine::new("x", layers, profiles).unwrap()
    }

    #[test]
    fn shapes_outside_the_profiles_are_rejected_before_running() {
        let e = engine();
        assert_eq!(e.select(&[2, 8, 64, 32]).unwrap(), 0);
        let err = e.select(&[2, 8, 70, 32]).unwrap_err().to_string();
        assert!(
            err.contains("dimension 2 = 70") && err.contains("pad by 10 to 80"),
            "{err}"
        );
        let bad = Engine::new(
            "x",
            vec![Layer::Norm(Norm::group("gn3", 4, 3, 1e-5, vec![], vec![]))],
            engine().profiles,
        );
        assert!(bad.is_err());
    }

    #[cfg(feature = "cuda")]
    #[test]
    fn execute_matches_the_reference_chain() {
        let e = engine();
        if let Err(err) = crate::norm::gpu::Gpu::get() {
            eprintln!("skipping GPU test: {err}");
            return;
        }
        let shape = [2, 8, 48, 32];
        let x: Vec<f32> = (0..2 * 8 * 48 * 32)
            .map(|i| ((i * 7919) % 1000) as f32 / 300.0 - 1.5)
            .collect();
        let got = e.execute(&shape, super::super::DType::F32, &x).unwrap();
        let mut want: Vec<f64> = x.iter().map(|v| *v as f64).collect();
        for l in &e.layers {
            want = reference(l, &shape, &want).unwrap();
        }
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (*a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0),
                "{a} vs {b}"
            );
        }
    }
}
