//! "Did you mean …?": the closest of the names a parser knows to one it does not, so every
//! error about an unknown key, column, format or value can name the likely intended one.

/// The entry of `valid` closest in spelling to `unknown` (case and `-`/`_` aside), or `None`
/// when nothing is close enough to be a likely typo.
pub fn closest(unknown: &str, valid: &[&str]) -> Option<String> {
    let wanted = unknown.trim().to_lowercase().replace('-', "_");
    if let Some(k) = valid.iter().find(|k| k.to_lowercase().replace('-', "_") == wanted) {
        return Some(k.to_string());
    }
    // Jaro-Winkler favours shared prefixes (`engin`), Damerau-Levenshtein catches swaps
    // (`taregt`), and one edit is a likely typo even in two-letter keys (`bz`).
    valid
        .iter()
        .map(|k| {
            let jw = strsim::jaro_winkler(&wanted, k) - 0.85;
            let dl = strsim::normalized_damerau_levenshtein(&wanted, k) - 0.6;
            let one_edit = if strsim::damerau_levenshtein(&wanted, k) <= 1 { 0.0 } else { -1.0 };
            (jw.max(dl).max(one_edit), *k)
        })
        .filter(|(score, _)| *score >= 0.0)
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .map(|(_, k)| k.to_string())
}

#[cfg(test)]
mod tests {
    use super::closest;

    #[test]
    fn typos_find_their_key_and_strangers_find_none() {
        let keys = ["engine", "target", "bs", "iodepth"];
        assert_eq!(closest("engin", &keys).as_deref(), Some("engine"));
        assert_eq!(closest("taregt", &keys).as_deref(), Some("target"));
        assert_eq!(closest("bz", &keys).as_deref(), Some("bs"));
        assert_eq!(closest("IODEPTH", &keys).as_deref(), Some("iodepth"));
        assert_eq!(closest("iodepht", &keys).as_deref(), Some("iodepth"));
        assert_eq!(closest("compression", &keys), None);
    }
}
