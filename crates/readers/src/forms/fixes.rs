//! One line of a spec as torch prints it in "Suggested fixes" and users write it: `h = Dim('h',
//! min=2, max=64)`, `w = 8*_w + 5`, `b = 1`, `Dim.AUTO`: read into a [`FixKind`]. The reader of
//! `ConstraintViolationError`'s fixes and the spec reader ([`crate::spec::read`]) both read
//! `Dim(...)` through these.

use crate::message::{Fix, FixKind};
use dimguard_solver::parse::{self, Node};
use dimguard_solver::syntax::parse_expr;
use dimguard_solver::Expr;

/// One line of "Suggested fixes", or of a user's spec: `NAME = RHS`.
pub fn read_fix(line: &str) -> Option<Fix> {
    let (name, rhs) = line.split_once(" = ")?;
    let name = name.trim().to_string();
    if name.contains(' ') {
        return None;
    }
    // `dim = None  # 3` means "make it static; the traced value is 3".
    let (code, comment) = match rhs.split_once('#') {
        Some((c, m)) => (c.trim(), Some(m.trim())),
        None => (rhs.trim(), None),
    };
    let kind = if code == "None" {
        comment
            .and_then(|c| c.parse().ok())
            .map_or(FixKind::Other, FixKind::Const)
    } else {
        fix_kind(code).unwrap_or(FixKind::Other)
    };
    Some(Fix {
        name,
        text: rhs.trim().to_string(),
        kind,
    })
}
/// The name a `Dim('name', ...)` call gives its dimension (its first argument, a string that is a
/// Python identifier, as torch requires).
pub fn dim_label(code: &str) -> Option<String> {
    let node = parse::parse(code.trim()).ok()?;
    let Node::Call { func, args, .. } = &node.node else {
        return None;
    };
    if func != "Dim" && !func.ends_with(".Dim") {
        return None;
    }
    match &args.first()?.node {
        Node::Str(s)
            if s.chars()
                .next()
                .is_some_and(|c| c.is_alphabetic() || c == '_')
                && s.chars().all(|c| c.is_alphanumeric() || c == '_') =>
        {
            Some(s.clone())
        }
        _ => None,
    }
}
/// The meaning of the right-hand side of a spec assignment (`Dim(...)`, `8*_h + 1`, `224`,
/// `Dim.AUTO`, `Dim.STATIC`).
pub fn fix_kind(code: &str) -> Option<FixKind> {
    match code.trim() {
        "Dim.AUTO" | "Dim.DYNAMIC" | "torch.export.Dim.AUTO" | "torch.export.Dim.DYNAMIC" => {
            return Some(FixKind::Auto)
        }
        "Dim.STATIC" | "torch.export.Dim.STATIC" | "None" => return Some(FixKind::Static),
        _ => {}
    }
    let node = parse::parse(code).ok()?;
    if let Node::Call { func, kwargs, .. } = &node.node {
        if func == "Dim" || func.ends_with(".Dim") {
            return Some(FixKind::Dim {
                min: dimguard_solver::syntax::int_kwarg(code, kwargs, "min"),
                max: dimguard_solver::syntax::int_kwarg(code, kwargs, "max"),
            });
        }
    }
    let e = parse_expr(code).ok()?;
    if let Expr::Const(c) = &e {
        return c.is_integer().then(|| FixKind::Const(*c.numer()));
    }
    let atoms = e.atoms();
    let [root] = atoms.iter().collect::<Vec<_>>()[..] else {
        return None;
    };
    let at = |x: i128| e.int_at(&|a: &str| (a == &**root).then_some(x));
    let (b0, b1, b2) = (at(0)?, at(1)?, at(2)?);
    let coef = b1 - b0;
    // Affine check on a third point; torch only prints affine relations.
    (b2 - b1 == coef).then(|| FixKind::Derived {
        root: root.to_string(),
        coef,
        offset: b0,
    })
}
