//! A small engine: a chain of normalization layers with optimization profiles. `execute`
//! validates the input shape against the profiles (the actionable error of `ProfileSet::select`)
//! before anything runs, then runs the layers on the GPU's stream, with run-time parameters
//! (BatchNorm statistics computed just before, say) bound to device buffers by tensor name.

use crate::gpu::{Buffer, Gpu, Strategy};
use crate::{DType, Layer, NormError};
use dimguard_trt::profile::{Error as ProfileError, ProfileSet};

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
                .ok_or_else(|| ProfileError::Shape {
                    input: input.to_string(),
                    message: "the profiles have no such input".into(),
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
        Ok(self.profiles.select(&[(self.input.as_str(), s)])?)
    }

    /// Runs every layer on `x` (f32 host values of `shape`, stored as `dt` on the device) and
    /// returns the result. Run-time parameters are read from `bound` (tensor name, buffer);
    /// each is checked against its layer before that layer is launched.
    pub fn execute(
        &self,
        shape: &[usize],
        dt: DType,
        x: &[f32],
        bound: &[(&str, &Buffer)],
    ) -> Result<Vec<f32>, NormError> {
        self.select(shape)?;
        let n: usize = shape.iter().product();
        if x.len() != n {
            return Err(ProfileError::Shape {
                input: self.input.clone(),
                message: format!(
                    "{} values given for shape {shape:?} ({n} expected)",
                    x.len()
                ),
            }
            .into());
        }
        let g = Gpu::get()?;
        let mut cur = g.upload(dt, x)?;
        for l in &self.layers {
            let mut next = g.poisoned(dt, n)?;
            let mut p = g.prepare(l, shape, dt, Strategy::Auto)?;
            g.launch(&mut p, &cur, &mut next, bound)?;
            cur = next;
        }
        g.download(&cur)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{reference, BatchNorm, Norm, Param};
    use dimguard_solver::DimSet;
    use dimguard_trt::profile::{DimKind, InputSpec};

    fn engine(bn: BatchNorm) -> Engine {
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
            Layer::Batch(bn),
            Layer::Norm(Norm::group("gn", 4, 4, 1e-5, vec![1.5; 8], vec![0.1; 8])),
            Layer::Norm(Norm::layer("ln", 4, 1, 1e-5, vec![], vec![])),
        ];
        Engine::new("x", layers, profiles).unwrap()
    }

    fn const_bn() -> BatchNorm {
        BatchNorm::new("bn", vec![0.5; 8], vec![2.0; 8], vec![], vec![], 1e-5)
    }

    #[test]
    fn shapes_outside_the_profiles_are_rejected_before_running() {
        let e = engine(const_bn());
        assert_eq!(e.select(&[2, 8, 64, 32]).unwrap(), 0);
        let err = e.select(&[2, 8, 70, 32]).unwrap_err().to_string();
        assert!(
            err.contains("dimension 2 = 70") && err.contains("pad by 10 to 80"),
            "{err}"
        );
        let bad = Engine::new(
            "x",
            vec![Layer::Norm(Norm::group("gn3", 4, 3, 1e-5, vec![], vec![]))],
            engine(const_bn()).profiles,
        );
        assert!(bad.is_err());
        let none = Engine::new("y", vec![], engine(const_bn()).profiles)
            .err()
            .unwrap()
            .to_string();
        assert!(none.contains("input `y`"), "{none}");
    }

    /// The original report: a BatchNorm whose statistics and affine parameters are tensors
    /// computed at run time, here by another layer of the engine's GPU (a BatchNorm over a
    /// `[1, 8]` input) just before the engine runs.
    #[test]
    fn batch_norm_with_runtime_parameters_runs_in_the_engine() {
        let Ok(g) = Gpu::get() else {
            eprintln!("skipping GPU test: {}", Gpu::get().err().unwrap());
            return;
        };
        let bn = BatchNorm::new(
            "bn",
            Param::runtime("mean"),
            Param::runtime("var"),
            Param::runtime("weight"),
            vec![0.25; 8],
            1e-5,
        );
        let e = engine(bn);
        let shape = [2, 8, 48, 32];
        let x: Vec<f32> = (0..2 * 8 * 48 * 32)
            .map(|i| ((i * 7919) % 1000) as f32 / 300.0 - 1.5)
            .collect();
        // Parameters produced on the device: y = 2 x + 1 over [1, 8] with x = 0.1 * c.
        let producer = Layer::Batch(BatchNorm::new(
            "p",
            vec![0.0; 8],
            vec![1.0; 8],
            vec![2.0; 8],
            vec![1.0; 8],
            0.0,
        ));
        let mut made = Vec::new();
        for (dt, seed) in [(DType::F32, 0.1f32), (DType::BF16, 0.2), (DType::F16, 0.3)] {
            let src = g
                .upload(dt, &(0..8).map(|c| seed * c as f32).collect::<Vec<_>>())
                .unwrap();
            let mut out = g.poisoned(dt, 8).unwrap();
            g.run(&producer, &[1, 8], &src, &mut out, &[]).unwrap();
            made.push(out);
        }
        let bound = [("mean", &made[0]), ("var", &made[1]), ("weight", &made[2])];
        let got = e.execute(&shape, DType::F32, &x, &bound).unwrap();
        let values: Vec<Vec<f32>> = made.iter().map(|b| g.download(b).unwrap()).collect();
        let host = [
            ("mean", &values[0][..]),
            ("var", &values[1][..]),
            ("weight", &values[2][..]),
        ];
        let mut want: Vec<f64> = x.iter().map(|v| *v as f64).collect();
        for l in &e.layers {
            want = reference(l, &shape, &want, &host).unwrap();
        }
        for (a, b) in got.iter().zip(&want) {
            assert!(
                (*a as f64 - b).abs() <= 1e-4 * b.abs().max(1.0),
                "{a} vs {b}"
            );
        }
        // A bound tensor of the wrong length is refused before anything runs.
        let short = g.upload(DType::F32, &[1.0; 7]).unwrap();
        let err = e
            .execute(
                &shape,
                DType::F32,
                &x,
                &[("mean", &made[0]), ("var", &short), ("weight", &made[2])],
            )
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("running_var (run-time tensor `var`) has 7 values but 8 were expected"),
            "{err}"
        );
        let err = e
            .execute(&shape, DType::F32, &x, &bound[..2])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("weight is the run-time tensor `weight`, which was not bound"),
            "{err}"
        );
    }
}
