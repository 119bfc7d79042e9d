//! Where a guard came from: building the contract's [`Provenance`] from the frames a text gives,
//! naming its origin, and what torch's guard-adding operators do (shared by every reader: logs,
//! draft_export reports, `TORCH_TRACE` files).

pub use crate::report::{Frame, Provenance};

impl Provenance {
    /// Builds a provenance from frames (outermost first): the innermost user frame gives
    /// `file`/`line`/`function` (else the innermost frame, with `user` false), and the innermost
    /// frame inside torch gives `op`.
    pub fn from_frames(stack: Vec<Frame>, code: Option<String>) -> Provenance {
        let user = stack.iter().rev().find(|f| is_user_file(&f.file));
        let op = stack
            .iter()
            .rev()
            .find(|f| !is_user_file(&f.file))
            .map(|f| f.function.clone());
        let at = user.or(stack.last());
        Provenance {
            file: at.map(|f| f.file.clone()),
            line: at.map(|f| f.line),
            function: at.map(|f| f.function.clone()),
            code,
            op,
            user: user.is_some(),
            stack,
        }
    }

    /// `model.py:77 (forward)`, or the operator with what it does (`pooling_output_shape_pad_lr
    /// (ceil-mode pooling)`), or `unknown origin`.
    pub fn origin(&self) -> String {
        match (&self.file, self.line, self.user) {
            (Some(f), Some(l), true) => match &self.function {
                Some(func) => format!("{f}:{l} ({func})"),
                None => format!("{f}:{l}"),
            },
            _ => match &self.op {
                Some(op) => match describe_op(op) {
                    Some(what) => format!("{op} ({what})"),
                    None => op.clone(),
                },
                None => match (&self.file, self.line) {
                    (Some(f), Some(l)) => format!("{f}:{l}"),
                    _ => "unknown origin".into(),
                },
            },
        }
    }
}

/// Whether a file path printed in a log or stack is the user's code rather than torch's
/// (torch shortens its own paths to `_meta_registrations.py`, `nn/modules/pooling.py`, ...).
pub fn is_user_file(file: &str) -> bool {
    let f = file.replace('\\', "/");
    const TORCH: [&str; 8] = [
        "site-packages/",
        "dist-packages/",
        "torch/",
        "nn/modules/",
        "nn/functional.py",
        "<eval_with_key>",
        "fx/",
        "utils/_",
    ];
    if TORCH.iter().any(|t| f.contains(t)) {
        return false;
    }
    // torch-relative paths of private modules: `_meta_registrations.py`, `_refs/__init__.py`,
    // `_subclasses/fake_impls.py`, `_prims_common/__init__.py`, `_ops.py`, `_export/...`.
    let first = f.split('/').next().unwrap_or("");
    !(first.starts_with('_') || f == "<string>" || f.starts_with("functional.py"))
}

/// What a torch operator or helper that adds guards does, in plain words.
pub fn describe_op(op: &str) -> Option<&'static str> {
    Some(match op {
        "pooling_output_shape_pad_lr" | "pooling_output_shape" => {
            "the output size of a pooling with ceil_mode=True"
        }
        "max_pool2d_checks_and_compute_shape" | "avg_pool2d" => "a pooling's output size",
        "infer_size" | "fast_binary_impl" | "broadcast_shapes" | "_broadcast_shapes" => {
            "a broadcast in an elementwise op: the sizes must match or be 1"
        }
        "_reshape_view_helper" | "_reshape_view_helper_core_alg" | "view" | "reshape" => {
            "a view or reshape: the sizes must divide"
        }
        "check_contiguous_sizes_strides" | "is_contiguous" | "is_contiguous_for_memory_format" => {
            "a contiguity check: layout only, a size of 1 is special"
        }
        "_compute_reduction_shape" | "cat" | "_cat_meta" => "a concatenation",
        "upsample_nearest2d" | "_compute_upsample_nearest_indices" | "interpolate" => {
            "an interpolation's output size"
        }
        "conv" | "_conv" | "calc_conv_nd_return_shape" | "_formula" => {
            "a convolution's output size"
        }
        "pixel_shuffle" | "pixel_unshuffle" => "pixel_shuffle: a size must divide",
        "nonzero" => "nonzero: an output size that depends on data",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(file: &str, line: u32, function: &str) -> Frame {
        Frame {
            file: file.into(),
            line,
            function: function.into(),
        }
    }

    #[test]
    fn user_frame_and_operator() {
        let p = Provenance::from_frames(
            vec![
                frame("model.py", 13, "forward"),
                frame("_subclasses/fake_impls.py", 2435, "infer_size"),
            ],
            Some("f = a + b".into()),
        );
        assert!(p.user);
        assert_eq!(p.origin(), "model.py:13 (forward)");
        assert_eq!(p.op.as_deref(), Some("infer_size"));
        let p = Provenance::from_frames(
            vec![frame(
                "_meta_registrations.py",
                5162,
                "pooling_output_shape_pad_lr",
            )],
            None,
        );
        assert!(!p.user);
        assert_eq!(
            p.origin(),
            "pooling_output_shape_pad_lr (the output size of a pooling with ceil_mode=True)"
        );
    }

    #[test]
    fn torch_files() {
        for f in [
            "/usr/lib/python3/site-packages/torch/nn/modules/module.py",
            "nn/modules/pooling.py",
            "_refs/__init__.py",
            "_prims_common/__init__.py",
            "utils/_stats.py",
            "_ops.py",
        ] {
            assert!(!is_user_file(f), "{f}");
        }
        for f in ["model.py", "/home/me/proj/net.py", "mp/forms/t1.py"] {
            assert!(is_user_file(f), "{f}");
        }
    }
}
