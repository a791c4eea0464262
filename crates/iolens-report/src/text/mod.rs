//! Terminal text of the commands' results: one module per kind of result, all laid out with the
//! one [`table::Table`] and the one number format family of [`number`].

pub mod beff;
pub mod beff_io;
pub mod clean;
pub mod compare;
pub mod darshan;
pub mod monitor;
pub mod number;
pub mod quick;
pub mod repeat;
pub mod run;
pub mod saturate;
pub mod study;
pub mod sweep;
pub mod table;
pub mod trace;
pub mod validate;
pub mod write_modes;

/// `text` as lines of at most `width` characters, broken at spaces, the lines after the first
/// indented by `indent` spaces; a word longer than a line (a path) keeps a line of its own.
pub fn wrap(text: &str, width: usize, indent: usize) -> String {
    let mut out = String::new();
    let mut line = String::new();
    let (mut line_len, mut has_word) = (0, false);
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let word_len = word.chars().count();
        if has_word && line_len + 1 + word_len > width {
            out.push_str(&line);
            out.push('\n');
            line = " ".repeat(indent);
            (line_len, has_word) = (indent, false);
        }
        if has_word {
            line.push(' ');
            line_len += 1;
        }
        line.push_str(word);
        line_len += word_len;
        has_word = true;
    }
    out.push_str(&line);
    out
}

/// `head` then `items` joined by ", ", as lines of at most `width` characters with the lines
/// after the first indented by `indent`; an item (`POSIX_READS 12`) is never broken.
pub fn wrap_list(head: &str, items: &[String], width: usize, indent: usize) -> String {
    // Spaces inside an item are held as a character no item holds while the line is wrapped.
    const HELD: char = '\u{1}';
    let held: Vec<String> = items.iter().map(|i| i.replace(' ', &HELD.to_string())).collect();
    wrap(&format!("{head}{}", held.join(", ")), width, indent).replace(HELD, " ")
}

#[cfg(test)]
mod wrap_tests {
    use super::wrap;

    #[test]
    fn long_lines_break_at_spaces_within_the_width_and_keep_every_word() {
        let text = "warning[page_cache_reads]: reads served mostly from the page cache: the device read \
                    16.4 MiB for 1715.7 MiB requested (1%); this measures memory, not storage (use --direct)";
        let wrapped = wrap(text, 60, 2);
        assert!(wrapped.lines().all(|l| l.chars().count() <= 60), "{wrapped}");
        assert!(wrapped.lines().skip(1).all(|l| l.starts_with("  ") && !l.starts_with("   ")), "{wrapped}");
        assert_eq!(
            wrapped.split_whitespace().collect::<Vec<_>>(),
            text.split_whitespace().collect::<Vec<_>>()
        );
        assert_eq!(wrap("short", 60, 2), "short");
        let path = format!("target {}", "/very".repeat(20));
        assert_eq!(wrap(&path, 40, 2), format!("target\n  {}", "/very".repeat(20)));
    }

    #[test]
    fn a_list_breaks_between_its_items_only() {
        let items: Vec<String> = (0..30).map(|i| format!("POSIX_COUNTER_{i} {}", i * 1000)).collect();
        let text = super::wrap_list("POSIX: ", &items, 60, 2);
        assert!(text.lines().count() > 3, "{text}");
        assert!(text.lines().all(|l| l.chars().count() <= 60), "{text}");
        for item in &items {
            assert!(text.lines().any(|l| l.contains(item.as_str())), "{item} kept whole: {text}");
        }
    }
}
