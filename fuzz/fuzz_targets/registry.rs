//! The ownership registry's documents (a run's lease, the kept list): whatever a crash or another
//! hand left on disk, parsing never panics, keeps only whole entries with absolute paths, and an
//! entry written back reads back the same.
#![no_main]

use iolens_ownership::{format_document, parse_document, Entry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for header in ["iolens-run-v2", "iolens-kept-v2"] {
        let doc = parse_document(data, header);
        for e in &doc.entries {
            assert!(e.path.is_absolute());
            assert_eq!(Entry::from_line(&e.to_line()).as_ref(), Some(e));
        }
        let entries: Vec<&Entry> = doc.entries.iter().collect();
        let again = parse_document(format_document(header, &entries).as_bytes(), header);
        assert_eq!(again.entries, doc.entries);
        assert!(again.complete && again.unreadable == 0);
    }
});
