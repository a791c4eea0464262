//! `iolens report RESULT.json… --html OUT.html`: every result drawn on one self-contained page
//! (see `iolens_report::export::html`). Results are read as `compare` reads them: bounded, and
//! every error names its file.

use iolens_report::export::html;

use crate::cli::{ReportArgs, VERSION};
use crate::output::EXIT_USAGE;
use iolens_report::compare::read_result_file;

pub fn report(a: ReportArgs) -> Result<(), u8> {
    let refuse = |message: String| {
        errln!("iolens: error: {message}");
        EXIT_USAGE
    };
    let docs = a.files.iter().map(|f| read_result_file(f)).collect::<Result<Vec<_>, _>>().map_err(refuse)?;
    let names: Vec<String> = a.files.iter().map(|f| f.display().to_string()).collect();
    let sources: Vec<html::Source<'_>> =
        names.iter().zip(&docs).map(|(name, doc)| html::Source { name, doc }).collect();
    let page = html::render(&sources, &format!("iolens {VERSION}")).map_err(refuse)?;
    html::write_page(&a.html, &page);
    Ok(())
}
