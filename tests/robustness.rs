//! Nothing panics on any input: random strings, mutated real messages, huge numbers.

use dimguard::commands::diagnose::{diagnose_text, Options};
use dimguard::solver::{parse_expr, parse_guard};
use proptest::prelude::*;

fn messages() -> Vec<String> {
    let dir = format!("{}/tests/data/messages", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect()
}

const PIECES: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "//",
    "%",
    "**",
    "-",
    "+",
    "*",
    "/",
    "==",
    "<=",
    "and",
    "or",
    "not",
    "Mod(",
    "Eq(",
    "Piecewise((",
    "True",
    ", ",
    "L['x'].size()[2]",
    "9223372036854775807",
    "0.5",
    "oo",
    "-oo",
    "Min(",
    "max(",
    "math.trunc(",
    "torch.sym_float(",
    "Symbol('s0', integer=True)",
    "Integer(",
    "Rational(1, 0)",
    "'",
    "\n",
    "0",
    "1e999",
    "99999999999999999999999999999999999999999",
    "if",
    "else",
    "~",
    "&",
    "|",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn random_strings(s in "\\PC{0,80}") {
        let _ = parse_guard(&s);
        let _ = diagnose_text(&s, &Options::default());
    }

    #[test]
    fn random_token_soup(parts in prop::collection::vec(0..PIECES.len(), 0..40)) {
        let s: String = parts.iter().map(|&i| PIECES[i]).collect();
        let _ = parse_expr(&s);
        let guard = format!("  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 5000 satisfy the generated guard {s}.");
        let _ = diagnose_text(&guard, &Options::default());
    }
}

proptest! {
    // A mutation can turn 100..1000 into 100..10000000, which is then diagnosed for real.
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn mutated_messages(idx in 0usize..7, cut in 0usize..4000, ins in 0..PIECES.len(), del in 0usize..20) {
        let msgs = messages();
        let m = &msgs[idx % msgs.len()];
        let mut chars: Vec<char> = m.chars().collect();
        let at = cut % (chars.len() + 1);
        let end = (at + del).min(chars.len());
        chars.splice(at..end, PIECES[ins].chars());
        let text: String = chars.into_iter().collect();
        let _ = diagnose_text(&text, &Options::default());
    }
}

#[test]
fn extreme_ranges_and_literals() {
    for text in [
        "  - Not all values of h = L['x'].size()[2] in the specified range 0 <= h <= 9223372036854775807 satisfy the generated guard (L['x'].size()[2] * 9223372036854775807) % 7 == 3.",
        "  - Not all values of h = L['x'].size()[2] in the specified range h <= 9223372036854775807 satisfy the generated guard L['x'].size()[2] % (L['x'].size()[2] - 1) == 0.",
        "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h satisfy the generated guard 2 ** L['x'].size()[2] > 5.",
        "  - Not all values of h = L['x'].size()[2] in the specified range 2 <= h <= 99 satisfy the generated guard L['x'].size()[2] // 0 == 1.",
    ] {
        let r = diagnose_text(text, &Options::default()).unwrap();
        assert_eq!(r.dims.len(), 1);
    }
}
