//! A sample's cells as bytes and back: how an import's check pass keeps
//! the rows it has parsed and validated, so its store pass reads them
//! back instead of parsing the JSON again (see [`crate::import`]).
//!
//! Each cell is a tag byte and its value: nothing (`NULL`), 8 bytes
//! little-endian (integer, float), 1 byte (bool), or a 4-byte length and
//! the bytes (text, JSON text, bytes). A row is its [`SAMPLE_COLUMNS`]
//! cells back to back. The bytes never leave the process's own temporary
//! file: no version, no compatibility.
//!
//! [`SAMPLE_COLUMNS`]: super::SAMPLE_COLUMNS

use std::io::{self, Read};

use super::schema::{Cell, CellOut, sample_into};
use crate::session::SampleRow;

const NULL: u8 = 0;
const INT: u8 = 1;
const REAL: u8 = 2;
const TEXT: u8 = 3;
const BOOL: u8 = 4;
const JSON: u8 = 5;
const BYTES: u8 = 6;

/// Appends `r`'s cells to `out`, or refuses the row as
/// [`super::sample_cells`] would (then `out` may hold part of it).
pub(crate) fn spill_sample(r: &SampleRow, out: &mut Vec<u8>) -> Result<(), String> {
    sample_into(r, &mut Spill(out))
}

struct Spill<'a>(&'a mut Vec<u8>);

impl Spill<'_> {
    fn sized(&mut self, tag: u8, bytes: &[u8]) {
        self.0.push(tag);
        // A cell's text is far below 4 GiB: the store's own limits.
        let len = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
        self.0.extend_from_slice(&len.to_le_bytes());
        self.0.extend_from_slice(bytes);
    }
}

impl CellOut for Spill<'_> {
    fn put(&mut self, c: Cell) {
        match c {
            Cell::Null => self.0.push(NULL),
            Cell::Int(v) => {
                self.0.push(INT);
                self.0.extend_from_slice(&v.to_le_bytes());
            }
            Cell::Real(v) => {
                self.0.push(REAL);
                self.0.extend_from_slice(&v.to_le_bytes());
            }
            Cell::Bool(b) => self.0.extend_from_slice(&[BOOL, u8::from(b)]),
            Cell::Text(s) => self.sized(TEXT, s.as_bytes()),
            Cell::Json(v) => self.sized(JSON, v.to_string().as_bytes()),
            Cell::JsonText(t) => self.sized(JSON, t.as_bytes()),
            Cell::Bytes(b) => self.sized(BYTES, &b),
        }
    }
    fn text(&mut self, s: &str) {
        self.sized(TEXT, s.as_bytes());
    }
    fn shown(&mut self, v: &dyn std::fmt::Display) {
        self.sized(TEXT, v.to_string().as_bytes());
    }
    fn json<T: serde::Serialize>(&mut self, v: &T) -> Result<(), String> {
        // Through a `Value`, as `sample_cells` stores it: the same text
        // (its keys in the same order) either way.
        let v = serde_json::to_value(v).map_err(|e| e.to_string())?;
        self.sized(JSON, v.to_string().as_bytes());
        Ok(())
    }
}

/// Reads one row of `width` cells spilled by [`spill_sample`] from `r`
/// into `out` (JSON as [`Cell::JsonText`]); `Ok(false)` at the end of `r`.
pub(crate) fn read_spilled(
    r: &mut impl Read,
    width: usize,
    out: &mut Vec<Cell>,
) -> io::Result<bool> {
    for i in 0..width {
        let mut tag = [0u8; 1];
        if i == 0 {
            if r.read(&mut tag)? == 0 {
                return Ok(false);
            }
        } else {
            r.read_exact(&mut tag)?;
        }
        let mut eight = [0u8; 8];
        let cell = match tag[0] {
            NULL => Cell::Null,
            INT => {
                r.read_exact(&mut eight)?;
                Cell::Int(i64::from_le_bytes(eight))
            }
            REAL => {
                r.read_exact(&mut eight)?;
                Cell::Real(f64::from_le_bytes(eight))
            }
            BOOL => {
                let mut b = [0u8; 1];
                r.read_exact(&mut b)?;
                Cell::Bool(b[0] != 0)
            }
            TEXT | JSON | BYTES => {
                let mut len = [0u8; 4];
                r.read_exact(&mut len)?;
                let mut bytes = vec![0u8; u32::from_le_bytes(len) as usize];
                r.read_exact(&mut bytes)?;
                match tag[0] {
                    BYTES => Cell::Bytes(bytes),
                    t => {
                        let text = String::from_utf8(bytes)
                            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                        if t == TEXT {
                            Cell::Text(text)
                        } else {
                            Cell::JsonText(text)
                        }
                    }
                }
            }
            other => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidData,
                    format!("a spilled cell's tag is {other}"),
                ));
            }
        };
        out.push(cell);
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::sample_cells;

    /// The cells as the store would bind them, JSON as its text.
    fn as_text(cells: Vec<Cell>) -> Vec<Cell> {
        cells
            .into_iter()
            .map(|c| match c {
                Cell::Json(v) => Cell::JsonText(v.to_string()),
                c => c,
            })
            .collect()
    }

    /// A bare row and one with JSON, text, booleans and escapes.
    fn rows() -> Vec<SampleRow> {
        use crate::vocab::{Destination, PhaseKind, UtcTime};
        let bare = crate::Sample::empty(1, 0, crate::Connection::Fresh);
        let mut full = crate::Sample::empty(2, 0, crate::Connection::Reused);
        full.ttft_ms = Some(123.456);
        full.status = Some(200);
        full.request_id = Some("req \"7\" é\n".into());
        full.retried_stale = true;
        full.trace_id = Some("0af7651916cd43dd8448eb211c80319c".into());
        full.server_timing = Some([("db".to_string(), 1.5), ("llm".to_string(), 800.0)].into());
        full.flow_steps = Some(vec![crate::FlowStepTime {
            name: "create chat".into(),
            ms: 12.0,
            status: Some(201),
        }]);
        [bare, full]
            .into_iter()
            .map(|sample| SampleRow {
                session_id: "s".into(),
                phase: PhaseKind::Warm,
                dest: Destination::App {
                    path: Some("chat".into()),
                },
                concurrency: None,
                intended_start_ms: None,
                actual_start_ms: 1.0,
                started_at: UtcTime::from_unix_ms(0),
                provenance: crate::session::Provenance::Imported,
                prompt: None,
                sample,
            })
            .collect()
    }

    #[test]
    fn spilled_rows_read_back_as_the_cells_the_store_binds() {
        let rows = rows();
        let mut bytes = Vec::new();
        for r in &rows {
            spill_sample(r, &mut bytes).unwrap();
        }
        let width = super::super::SAMPLE_COLUMNS.len();
        let mut reader = bytes.as_slice();
        for r in &rows {
            let mut got = Vec::new();
            assert!(read_spilled(&mut reader, width, &mut got).unwrap());
            assert_eq!(got, as_text(sample_cells(r).unwrap()));
        }
        let mut rest = Vec::new();
        assert!(!read_spilled(&mut reader, width, &mut rest).unwrap());
        // Cut short inside a row: an error, not a shorter row.
        let mut cut = &bytes[..bytes.len() - 3];
        let mut got = Vec::new();
        for _ in 1..rows.len() {
            read_spilled(&mut cut, width, &mut got).unwrap();
        }
        assert!(read_spilled(&mut cut, width, &mut got).is_err());
    }
}
