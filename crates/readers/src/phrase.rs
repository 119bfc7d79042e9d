//! Finding fixed phrases in lines of text.
//!
//! Every reader asks each line of a text for a handful of phrases (`"Caused by: ("`,
//! `"Specializations unexpectedly required"`). The standard `str::find` prepares a two-way
//! search for its needle on every call, which for a line of a hundred bytes costs more than the
//! search itself: over a log of 75,000 lines it was a third of the reading time. [`Phrase`]
//! finds the same first occurrence by looking for the needle's first byte (`memchr`) and
//! comparing there, with nothing prepared, and uses a prepared linear-time search (`memmem`) on
//! long haystacks (a 10 MB line), so the worst case stays linear in the text.
//!
//! ```
//! use dimguard_readers::phrase::Phrase;
//! let line = "I1123 07:53:01 6430 x.py:1] Caused by: (m.py:3 in f)";
//! assert_eq!(line.phrase("Caused by: ("), line.find("Caused by: ("));
//! assert!(line.has("x.py") && !line.has("y.py"));
//! ```

/// Longest haystack searched by first byte; longer ones use `memmem`'s prepared search.
const SHORT: usize = 4096;

/// `find` and `contains` for a fixed phrase, answering exactly as `str::find` and
/// `str::contains` do (the first occurrence, as a byte offset).
pub trait Phrase {
    /// The byte offset of the first occurrence of `needle`, as `str::find(needle)`.
    fn phrase(&self, needle: &str) -> Option<usize>;
    /// Whether `needle` occurs, as `str::contains(needle)`.
    fn has(&self, needle: &str) -> bool {
        self.phrase(needle).is_some()
    }
}

impl Phrase for str {
    fn phrase(&self, needle: &str) -> Option<usize> {
        let (hay, pat) = (self.as_bytes(), needle.as_bytes());
        let Some((&first, rest)) = pat.split_first() else {
            return Some(0);
        };
        if hay.len() > SHORT {
            return memchr::memmem::find(hay, pat);
        }
        let last = hay.len().checked_sub(pat.len())?;
        let mut at = 0;
        while at <= last {
            let i = at + memchr::memchr(first, &hay[at..=last])?;
            if &hay[i + 1..i + pat.len()] == rest {
                return Some(i);
            }
            at = i + 1;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::Phrase;
    use proptest::prelude::*;

    proptest! {
        /// The same answer as the standard library, over texts drawn from a small alphabet (so
        /// that partial matches are frequent) and over any text with a needle cut from it.
        #[test]
        fn phrase_is_str_find(
            hay in "[ab( é]{0,40}",
            needle in "[ab( é]{0,5}",
            cut in (0usize..40, 0usize..8),
        ) {
            prop_assert_eq!(hay.phrase(&needle), hay.find(needle.as_str()));
            prop_assert_eq!(hay.has(&needle), hay.contains(needle.as_str()));
            let chars: Vec<char> = hay.chars().collect();
            let (a, n) = cut;
            let a = a.min(chars.len());
            let b = (a + n).min(chars.len());
            let inner: String = chars[a..b].iter().collect();
            prop_assert_eq!(hay.phrase(&inner), hay.find(inner.as_str()));
        }
    }

    #[test]
    fn long_haystacks_use_the_standard_search() {
        let hay = "(".repeat(10_000) + "Eq(";
        assert_eq!(hay.phrase("Eq("), Some(10_000));
        assert_eq!(hay.phrase("(("), Some(0));
        assert_eq!(hay.phrase("Ne("), None);
    }
}
