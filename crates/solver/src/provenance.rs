//! Where a guard comes from: the innermost frame of the user's own code.
//!
//! A guard's stack (from a `TORCH_TRACE` record, or a traceback) runs from the program's entry to
//! the line of torch that recorded the guard. The user wants the line of *their* model that made
//! torch record it: the innermost frame that is not inside torch, torchvision or the Python
//! standard library. The operator torch was computing there (`infer_size`,
//! `pooling_output_shape_pad_lr`, `slice_forward`) is kept as context.
//!
//! The JSON shape is the one agreed in COORD.md (`provenance` per guard):
//! `{"file", "line", "function", "code", "op", "user", "stack": [{"file", "line", "function"}]}`.

use serde::{Deserialize, Serialize};

/// One frame of a stack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Frame {
    /// The file as recorded (a full path, or `<string>`).
    pub file: String,
    /// 1-based line number.
    pub line: u32,
    /// The function's name.
    pub function: String,
    /// The source line, when recorded.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// Where one guard comes from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// The file of the attributed frame.
    pub file: String,
    /// Its line.
    pub line: u32,
    /// Its function.
    pub function: String,
    /// Its source line, when recorded (trimmed).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// The torch operator (shape function) that recorded the guard, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub op: Option<String>,
    /// True when `file`/`line` is the user's own code; false when only a library frame is known.
    pub user: bool,
    /// The whole stack, outermost first.
    pub stack: Vec<Frame>,
}

impl Provenance {
    /// `models.py:17` (the file's last path component and the line).
    pub fn location(&self) -> String {
        format!("{}:{}", short_file(&self.file), self.line)
    }

    /// Where the guard came from, in words: `model.py:77 (forward)` for the user's line, else the
    /// operator and what it does (`pooling_output_shape_pad_lr: the output size of a pooling with
    /// ceil_mode=True`), else the library frame.
    pub fn origin(&self) -> String {
        if self.user {
            return format!("{} ({})", self.location(), self.function);
        }
        match &self.op {
            Some(op) => match describe_op(op) {
                Some(what) => format!("{op}: {what}"),
                None => op.clone(),
            },
            None => format!("{} ({}, inside torch)", self.location(), self.function),
        }
    }
}

/// What a torch operator or shape helper that adds guards does, in plain words.
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
        "cat" | "_cat_meta" => "a concatenation",
        "upsample_nearest2d" | "_compute_upsample_nearest_indices" | "interpolate" => {
            "an interpolation's output size"
        }
        "conv" | "_conv" | "calc_conv_nd_return_shape" | "_formula" => {
            "a convolution's output size"
        }
        "slice_forward" => "a slice's output size",
        "pixel_shuffle" | "pixel_unshuffle" => "pixel_shuffle: a size must divide",
        "nonzero" => "nonzero: an output size that depends on data",
        _ => return None,
    })
}

/// The last path component of a file name.
pub fn short_file(file: &str) -> &str {
    file.rsplit(['/', '\\']).next().unwrap_or(file)
}

/// Attributes a stack (outermost first) to its innermost user frame. `extra` is a second,
/// shorter stack some records carry (dynamo's `user_stack` in strict export): its user frames are
/// preferred, as dynamo's own stack then holds only its interpreter. `None` when both are empty.
pub fn attribute(stack: &[Frame], extra: &[Frame]) -> Option<Provenance> {
    let op = stack
        .iter()
        .rev()
        .find(|f| is_operator_file(&f.file))
        .map(|f| f.function.clone());
    let user = extra
        .iter()
        .rev()
        .find(|f| !is_library(&f.file))
        .or_else(|| stack.iter().rev().find(|f| !is_library(&f.file)));
    let (frame, is_user) = match user {
        Some(f) => (f, true),
        None => (stack.last().or(extra.last())?, false),
    };
    let full: Vec<Frame> = if stack.is_empty() { extra } else { stack }
        .iter()
        .map(|f| Frame {
            code: None,
            ..f.clone()
        })
        .collect();
    Some(Provenance {
        file: frame.file.clone(),
        line: frame.line,
        function: frame.function.clone(),
        code: frame
            .code
            .as_ref()
            .map(|c| c.trim().to_string())
            .filter(|c| !c.is_empty()),
        op,
        user: is_user,
        stack: full,
    })
}

/// Whether a file belongs to torch, torchvision (and the other packages of the PyTorch family)
/// or the Python standard library, or is generated code (`<string>`, `<frozen ...>`,
/// `<eval_with_key>.3`).
pub fn is_library(file: &str) -> bool {
    if file.starts_with('<') {
        return true;
    }
    let f = file.replace('\\', "/");
    if is_torch_relative(&f) {
        return true;
    }
    const PACKAGES: [&str; 6] = [
        "torch",
        "torchvision",
        "torchaudio",
        "functorch",
        "torchgen",
        "sympy",
    ];
    let parts: Vec<&str> = f.split('/').collect();
    // Inside an installed package: `.../site-packages/torch/...`.
    for w in parts.windows(2) {
        if (w[0] == "site-packages" || w[0] == "dist-packages") && PACKAGES.contains(&w[1]) {
            return true;
        }
    }
    if parts
        .iter()
        .any(|p| *p == "site-packages" || *p == "dist-packages")
    {
        return false;
    }
    // The standard library: `.../lib/python3.11/x.py` (outside site-packages).
    if parts
        .windows(2)
        .any(|w| w[0] == "lib" && w[1].starts_with("python3"))
    {
        return true;
    }
    // A source checkout of torch (`~/pytorch/torch/_subclasses/...`) or a path relative to the
    // package (`torch/fx/experimental/symbolic_shapes.py` as log prefixes print it).
    parts.windows(2).any(|w| {
        PACKAGES[..5].contains(&w[0])
            && (w[1].starts_with('_')
                || matches!(
                    w[1],
                    "fx" | "nn"
                        | "export"
                        | "utils"
                        | "ops"
                        | "functional.py"
                        | "overrides.py"
                        | "transforms"
                        | "models"
                )
                || w[1] == "__init__.py")
    })
}

/// A path as `TORCH_LOGS` prints torch's own files: relative to the `torch` package
/// (`_meta_registrations.py`, `_subclasses/fake_impls.py`, `nn/modules/pooling.py`,
/// `utils/_stats.py`). A relative user path (`models/fpn.py`) is not one of these.
fn is_torch_relative(f: &str) -> bool {
    if f.starts_with('/') || f.contains(":/") || f.starts_with('.') {
        return false;
    }
    let first = f.split('/').next().unwrap_or("");
    (first.starts_with('_') && first != "__main__.py")
        || (f.contains('/')
            && matches!(
                first,
                "nn" | "fx" | "utils" | "export" | "autograd" | "distributed" | "_dynamo"
            ))
        || matches!(f, "functional.py" | "overrides.py")
}

/// Files whose functions compute shapes for an operator (their name is the guard's "op").
fn is_operator_file(file: &str) -> bool {
    let f = file.replace('\\', "/");
    // Log lines print torch's files relative to the package.
    let short = [
        "_subclasses/fake_impls.py",
        "_meta_registrations.py",
        "_refs/",
        "_prims/",
        "_prims_common/",
        "_decomp/",
        "nn/functional.py",
        "functional.py",
    ];
    if short.iter().any(|p| f.starts_with(p)) {
        return true;
    }
    [
        "torch/_subclasses/fake_impls.py",
        "torch/_meta_registrations.py",
        "torch/_refs/",
        "torch/_prims/",
        "torch/_prims_common/",
        "torch/_decomp/",
        "torch/nn/functional.py",
        "torch/functional.py",
        "torchvision/ops/",
    ]
    .iter()
    .any(|p| f.contains(p))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fr(file: &str, line: u32, function: &str) -> Frame {
        Frame {
            file: file.into(),
            line,
            function: function.into(),
            code: Some(format!("  code of {function}  ")),
        }
    }

    const SP: &str = "/venv/lib/python3.11/site-packages/";

    #[test]
    fn library_files() {
        assert!(is_library(&format!("{SP}torch/_subclasses/fake_impls.py")));
        assert!(is_library(&format!("{SP}torchvision/ops/boxes.py")));
        assert!(is_library("/usr/lib/python3.11/contextlib.py"));
        assert!(is_library("<string>"));
        assert!(is_library("torch/fx/experimental/symbolic_shapes.py"));
        assert!(is_library("/home/me/pytorch/torch/_refs/__init__.py"));
        assert!(!is_library("/home/me/project/model.py"));
        assert!(!is_library("models.py"));
        // TORCH_LOGS prints torch's files relative to the package, and shortens user paths.
        for f in [
            "_meta_registrations.py",
            "_subclasses/fake_impls.py",
            "nn/modules/pooling.py",
            "utils/_stats.py",
            "_ops.py",
            "_refs/__init__.py",
        ] {
            assert!(is_library(f), "{f}");
        }
        assert!(!is_library("mp/forms/t1.py"));
        assert!(!is_library("models/fpn.py"));
        // Other installed packages are the user's model code (timm, transformers...).
        assert!(!is_library(&format!("{SP}timm/models/resnet.py")));
        // A user's own directory named like a package is not torch.
        assert!(!is_library("/home/me/torch_models/fpn.py"));
    }

    #[test]
    fn innermost_user_frame_with_operator() {
        let stack = vec![
            fr("/home/me/run.py", 15, "<module>"),
            fr(&format!("{SP}torch/export/__init__.py"), 226, "export"),
            fr("/home/me/model.py", 26, "forward"),
            fr(
                &format!("{SP}torch/_subclasses/fake_impls.py"),
                2477,
                "fast_binary_impl",
            ),
            fr(
                &format!("{SP}torch/_subclasses/fake_impls.py"),
                2435,
                "infer_size",
            ),
            fr(&format!("{SP}torch/__init__.py"), 2167, "_check"),
            fr(
                &format!("{SP}torch/fx/experimental/symbolic_shapes.py"),
                8638,
                "_log_guard",
            ),
        ];
        let p = attribute(&stack, &[]).unwrap();
        assert_eq!((p.file.as_str(), p.line), ("/home/me/model.py", 26));
        assert_eq!(p.function, "forward");
        assert_eq!(p.code.as_deref(), Some("code of forward"));
        assert_eq!(p.op.as_deref(), Some("infer_size"));
        assert!(p.user);
        assert_eq!(p.stack.len(), 7);
        assert_eq!(p.location(), "model.py:26");
    }

    #[test]
    fn user_stack_preferred_and_library_only_stacks() {
        let stack = vec![fr(
            &format!("{SP}torch/fx/experimental/sym_node.py"),
            591,
            "guard_bool",
        )];
        let user = vec![
            fr(
                &format!("{SP}torch/_dynamo/functional_export.py"),
                243,
                "forward",
            ),
            fr("models.py", 17, "forward"),
        ];
        let p = attribute(&stack, &user).unwrap();
        assert_eq!((p.file.as_str(), p.line, p.user), ("models.py", 17, true));
        let p = attribute(&stack, &[]).unwrap();
        assert!(!p.user);
        assert_eq!(p.function, "guard_bool");
        assert!(attribute(&[], &[]).is_none());
    }
}
