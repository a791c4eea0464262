//! The CSV files the statistics commands read (`iolens correlate`, `iolens doe analyze`, and a
//! study's own results on resume): a header line, then one record per line, fields quoted as in
//! RFC 4180. A quoted field may hold commas and doubled quotes but not a line break: every
//! writer in iolens keeps records on one line, and a line-based reader can name the line of
//! every error.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// Files larger than this are refused before reading: a results table of that size is far
/// beyond any study, and reading it whole would exhaust memory.
pub const MAX_CSV_BYTES: u64 = 256 << 20;

/// A CSV that cannot be read or used, with where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvError {
    pub file: String,
    /// 1-based; 0 when the error is about the whole file.
    pub line: usize,
    /// The column the error is about, when there is one.
    pub column: Option<String>,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for CsvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            0 => write!(f, "{}: ", self.file)?,
            line => write!(f, "{}:{line}: ", self.file)?,
        }
        if let Some(c) = &self.column {
            write!(f, "column {c:?}: ")?;
        }
        write!(f, "{}", self.message)?;
        if let Some(h) = &self.hint {
            write!(f, "\n  hint: {h}")?;
        }
        Ok(())
    }
}

impl std::error::Error for CsvError {}

/// One record and the line it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvRow {
    pub line: usize,
    pub fields: Vec<String>,
}

/// A CSV file as its header and records; every record has as many fields as the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CsvTable {
    /// The file name, for messages.
    pub file: String,
    pub header: Vec<String>,
    pub rows: Vec<CsvRow>,
}

/// Splits one line into fields. Errors say why (an unterminated quote, text after a closing
/// quote) and at which character.
pub fn split_csv_line(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().enumerate().peekable();
    // Whether the current field began with a quote, and whether that quote is still open.
    let (mut quoted, mut open) = (false, false);
    while let Some((i, c)) = chars.next() {
        match c {
            '"' if open && chars.peek().is_some_and(|(_, n)| *n == '"') => {
                field.push('"');
                chars.next();
            }
            '"' if open => open = false,
            '"' if field.trim().is_empty() && !quoted => {
                field.clear();
                quoted = true;
                open = true;
            }
            '"' => return Err(format!("a quote inside an unquoted field (character {})", i + 1)),
            ',' if !open => {
                fields.push(std::mem::take(&mut field));
                quoted = false;
            }
            c if quoted && !open && !c.is_whitespace() => {
                return Err(format!("text after a closing quote (character {})", i + 1))
            }
            _ if quoted && !open => {}
            c => field.push(c),
        }
    }
    if open {
        return Err(
            "a quoted field is not closed on its line (line breaks in fields are not supported)".into()
        );
    }
    fields.push(field);
    Ok(fields)
}

/// Parses CSV text; `file` names it in errors. Blank lines are skipped; a UTF-8 byte order mark
/// and CRLF line ends are accepted.
pub fn parse_csv(text: &str, file: &str) -> Result<CsvTable, CsvError> {
    let err = |line: usize, column: Option<String>, message: String, hint: Option<&str>| CsvError {
        file: file.to_string(),
        line,
        column,
        message,
        hint: hint.map(str::to_string),
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l)).filter(|(_, l)| !l.trim().is_empty());
    let Some((header_line, first)) = lines.next() else {
        return Err(err(0, None, "the file is empty".into(), Some("the first line names the columns")));
    };
    let header: Vec<String> = split_csv_line(first)
        .map_err(|m| err(header_line, None, m, None))?
        .into_iter()
        .map(|h| h.trim().to_string())
        .collect();
    for (i, name) in header.iter().enumerate() {
        if let Some(j) = header[..i].iter().position(|h| h == name) {
            let message = format!("the header names this column twice (columns {} and {})", j + 1, i + 1);
            return Err(err(header_line, Some(name.clone()), message, Some("give each column its own name")));
        }
    }
    let mut rows = Vec::new();
    for (line, text) in lines {
        let fields = split_csv_line(text).map_err(|m| err(line, None, m, None))?;
        if fields.len() != header.len() {
            return Err(err(
                line,
                None,
                format!("{} fields where the header has {}", fields.len(), header.len()),
                Some("every line needs one field per column; quote fields that hold commas"),
            ));
        }
        rows.push(CsvRow { line, fields });
    }
    Ok(CsvTable { file: file.to_string(), header, rows })
}

/// Reads and parses a CSV file (see [`parse_csv`]), refusing what is not a regular file of at
/// most [`MAX_CSV_BYTES`] in UTF-8.
pub fn read_csv(path: &Path) -> Result<CsvTable, CsvError> {
    let file = path.display().to_string();
    let err = |message: String, hint: Option<&str>| CsvError {
        file: file.clone(),
        line: 0,
        column: None,
        message,
        hint: hint.map(str::to_string),
    };
    // A FIFO or device would block or never end: look before opening.
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read it: {e}"), None))?;
    if !meta.is_file() {
        return Err(err("not a regular file".into(), Some("give the path of a CSV file")));
    }
    let too_large =
        || err(format!("larger than {} MiB, too large for a results table", MAX_CSV_BYTES >> 20), None);
    if meta.len() > MAX_CSV_BYTES {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CSV_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| err(format!("cannot read it: {e}"), None))?;
    if bytes.len() as u64 > MAX_CSV_BYTES {
        return Err(too_large());
    }
    let text = String::from_utf8(bytes).map_err(|e| {
        let line = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|b| **b == b'\n').count() + 1;
        CsvError { line, ..err("not UTF-8 text".into(), Some("a CSV file is text; is this the right file?")) }
    })?;
    parse_csv(&text, &file)
}

impl CsvTable {
    /// The index of column `name`; `flag` is the option that named it, for the message, which
    /// names the closest column (`bw` for `BW`, `time` for `tme`) before listing them all.
    pub fn column(&self, flag: &str, name: &str) -> Result<usize, CsvError> {
        self.header.iter().position(|h| h == name).ok_or_else(|| {
            let header: Vec<&str> = self.header.iter().map(String::as_str).collect();
            let near = iolens_output::hint::closest(name, &header)
                .map(|k| format!("did you mean {k:?}? "))
                .unwrap_or_default();
            CsvError {
                file: self.file.clone(),
                line: 0,
                column: None,
                message: format!("{flag}: no column {name:?}"),
                hint: Some(format!("{near}its columns are {}", self.header.join(", "))),
            }
        })
    }

    /// Column `name` as finite numbers; errors give the line of a value that is not one.
    pub fn numbers(&self, flag: &str, name: &str) -> Result<Vec<f64>, CsvError> {
        let c = self.column(flag, name)?;
        self.rows
            .iter()
            .map(|row| {
                let text = row.fields[c].trim();
                match text.parse::<f64>() {
                    Ok(v) if v.is_finite() => Ok(v),
                    parsed => Err(CsvError {
                        file: self.file.clone(),
                        line: row.line,
                        column: Some(name.to_string()),
                        message: match parsed {
                            Ok(_) => format!("{text:?} is not a finite number"),
                            Err(_) => format!("{text:?} is not a number"),
                        },
                        hint: Some(format!("{flag} names a column of finite numbers")),
                    }),
                }
            })
            .collect()
    }

    /// Column `name` as finite numbers that are not all equal (a constant column has no
    /// variance, so nothing correlates with it).
    pub fn varying_numbers(&self, flag: &str, name: &str) -> Result<Vec<f64>, CsvError> {
        let values = self.numbers(flag, name)?;
        match values.first() {
            Some(first) if values.iter().all(|v| v == first) => Err(CsvError {
                file: self.file.clone(),
                line: 0,
                column: Some(name.to_string()),
                message: format!(
                    "{flag}: every row holds {first}, so the column has no variance to correlate"
                ),
                hint: Some(format!("leave {name:?} out, or check that the runs really differ")),
            }),
            _ => Ok(values),
        }
    }

    /// Column `name` as text (trimmed), one value per row.
    pub fn texts(&self, flag: &str, name: &str) -> Result<Vec<String>, CsvError> {
        let c = self.column(flag, name)?;
        Ok(self.rows.iter().map(|row| row.fields[c].trim().to_string()).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting_follows_rfc_4180() {
        assert_eq!(split_csv_line("a,\"b,c\",\"d\"\"e\",").unwrap(), ["a", "b,c", "d\"e", ""]);
        assert_eq!(split_csv_line(" \"x\" ,y").unwrap(), ["x", "y"]);
        assert!(split_csv_line("\"open").unwrap_err().contains("not closed"));
        assert!(split_csv_line("\"a\"b").unwrap_err().contains("after a closing quote"));
        assert!(split_csv_line("a\"b").unwrap_err().contains("inside an unquoted field"));
    }

    #[test]
    fn errors_name_the_line_and_column() {
        let t = parse_csv("x,y\n\n1,2\n3,nan\n", "d.csv").unwrap();
        assert_eq!(t.rows.iter().map(|r| r.line).collect::<Vec<_>>(), [3, 4], "blank lines keep numbering");
        assert_eq!(t.numbers("--time", "x").unwrap(), [1.0, 3.0]);
        let e = t.numbers("--time", "y").unwrap_err();
        assert_eq!((e.line, e.column.as_deref()), (4, Some("y")));
        assert!(e.to_string().starts_with("d.csv:4: column \"y\": \"nan\" is not a finite number"), "{e}");
        for bad in ["inf", "-inf", "1e999", "NaN", ""] {
            let t = parse_csv(&format!("x,y\n{bad},1\n"), "d.csv").unwrap();
            assert_eq!(t.numbers("--time", "x").unwrap_err().line, 2, "{bad:?}");
        }
        let e = t.column("--metrics", "z").unwrap_err();
        assert!(e.to_string().contains("--metrics: no column \"z\"") && e.hint.unwrap().contains("x, y"));
        let e = parse_csv("a,b\n1,2,3\n", "d.csv").unwrap_err();
        assert_eq!(e.line, 2);
        let e = parse_csv("a,b,a\n", "d.csv").unwrap_err();
        assert_eq!((e.line, e.column.as_deref()), (1, Some("a")));
        assert_eq!(parse_csv(" \n\n", "d.csv").unwrap_err().line, 0);
        let e = parse_csv("a\n\"x\n", "d.csv").unwrap_err();
        assert_eq!(e.line, 2, "{e}");
    }

    #[test]
    fn constant_columns_are_named() {
        let t = parse_csv("time,iops\n1,5\n2,5\n3,5\n", "c.csv").unwrap();
        assert_eq!(t.varying_numbers("--time", "time").unwrap(), [1.0, 2.0, 3.0]);
        let e = t.varying_numbers("--metrics", "iops").unwrap_err().to_string();
        assert!(e.starts_with("c.csv: column \"iops\": --metrics: every row holds 5"), "{e}");
    }

    #[test]
    fn bom_and_crlf_are_accepted() {
        let t = parse_csv("\u{feff}a,b\r\n1,2\r\n", "d.csv").unwrap();
        assert_eq!(t.header, ["a", "b"]);
        assert_eq!(t.rows[0].fields, ["1", "2"]);
    }

    #[test]
    fn files_that_are_not_csv_text_are_refused() {
        let dir = std::env::temp_dir().join(format!("iolens-csv-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_csv(&dir).unwrap_err();
        assert!(e.message.contains("not a regular file"), "{e}");
        let binary = dir.join("b.csv");
        std::fs::write(&binary, b"a,b\n1,2\n\xff\xfe\n").unwrap();
        let e = read_csv(&binary).unwrap_err();
        assert_eq!(e.line, 3, "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
