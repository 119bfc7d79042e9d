//! Helpers shared by the root tests that compare dimguard's JSON with recorded program runs
//! (`tests/unbounded.rs`, `tests/composed.rs`).

use serde_json::Value;

/// Whether `x` is in a set of the contract's set form (`segments` of `lo`, `hi`, `modulus`,
/// `residues`).
pub fn member(set: &Value, x: i64) -> bool {
    set["segments"].as_array().unwrap().iter().any(|s| {
        let (lo, hi, m) = (
            s["lo"].as_i64().unwrap(),
            s["hi"].as_i64().unwrap(),
            s["modulus"].as_i64().unwrap(),
        );
        lo <= x
            && x <= hi
            && s["residues"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r.as_i64() == Some(x.rem_euclid(m)))
    })
}

/// The value of the size `source` (`L['x'].size()[2]`) in a run's shapes (one per input, in the
/// order of `inputs`).
pub fn value_of(source: &str, inputs: &[String], shapes: &Value) -> i64 {
    let name = source.split('\'').nth(1).unwrap();
    let dim: usize = source
        .rsplit('[')
        .next()
        .unwrap()
        .trim_end_matches(']')
        .parse()
        .unwrap();
    let i = inputs.iter().position(|n| n == name).unwrap();
    shapes[i][dim].as_i64().unwrap()
}
