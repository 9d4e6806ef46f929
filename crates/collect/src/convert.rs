//! OTLP trace data → [`SpanRow`]s: ids to lowercase hex, the resource's
//! `service.name` to `service`, attributes to JSON values, events kept,
//! status ERROR to `error`. Decoding uses the official OTLP definitions
//! (`opentelemetry-proto`): protobuf through prost, OTLP/JSON through its
//! serde support, which reads hex-encoded ids and int64 times written as
//! strings, as OTLP/JSON requires.

use std::collections::BTreeMap;

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::{AnyValue, KeyValue, any_value};
use opentelemetry_proto::tonic::trace::v1::span::SpanKind as OtlpKind;
use opentelemetry_proto::tonic::trace::v1::status::StatusCode;
use prost::Message;
use serde_json::Value;

use firsttoken_record::span::{SpanEvent, SpanKind, SpanRow};

use crate::CollectError;

/// Spans converted from one export request.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Converted {
    /// The well-formed spans.
    pub spans: Vec<SpanRow>,
    /// Spans dropped because an id was missing or malformed (a trace id not
    /// 16 bytes or all zero, a span id not 8 bytes or all zero, a parent
    /// span id neither empty nor 8 bytes).
    pub malformed: u64,
}

/// Decodes an `ExportTraceServiceRequest` in OTLP/protobuf.
pub fn decode_protobuf(body: &[u8]) -> Result<ExportTraceServiceRequest, CollectError> {
    ExportTraceServiceRequest::decode(body).map_err(|e| CollectError::Decode(e.to_string()))
}

/// Decodes an `ExportTraceServiceRequest` in OTLP/JSON.
pub fn decode_json(body: &[u8]) -> Result<ExportTraceServiceRequest, CollectError> {
    serde_json::from_slice(body).map_err(|e| CollectError::Decode(e.to_string()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// `bytes` as an id of `len` bytes, not all zero.
fn id(bytes: &[u8], len: usize) -> Option<String> {
    (bytes.len() == len && bytes.iter().any(|&b| b != 0)).then(|| hex(bytes))
}

/// An OTLP value as JSON: strings, booleans and numbers as themselves (an
/// int64 as a JSON integer), arrays as arrays, key-value lists as objects,
/// bytes as lowercase hex; a non-finite double as its name (JSON has none).
pub fn any_value_json(v: Option<&AnyValue>) -> Value {
    use any_value::Value as V;
    match v.and_then(|v| v.value.as_ref()) {
        None => Value::Null,
        Some(V::StringValue(s)) => Value::String(s.clone()),
        Some(V::BoolValue(b)) => Value::Bool(*b),
        Some(V::IntValue(i)) => Value::from(*i),
        Some(V::DoubleValue(d)) => serde_json::Number::from_f64(*d)
            .map_or_else(|| Value::String(d.to_string()), Value::Number),
        Some(V::ArrayValue(a)) => {
            Value::Array(a.values.iter().map(|v| any_value_json(Some(v))).collect())
        }
        Some(V::KvlistValue(kv)) => Value::Object(
            kv.values
                .iter()
                .map(|kv| (kv.key.clone(), any_value_json(kv.value.as_ref())))
                .collect(),
        ),
        Some(V::BytesValue(b)) => Value::String(hex(b)),
        // An index into a dictionary this message type does not carry.
        Some(V::StringValueStrindex(i)) => Value::from(*i),
    }
}

/// Attributes as a map of JSON values (a repeated key: the last wins).
pub fn attributes(kvs: &[KeyValue]) -> BTreeMap<String, Value> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), any_value_json(kv.value.as_ref())))
        .collect()
}

fn kind(k: i32) -> SpanKind {
    match OtlpKind::try_from(k) {
        Ok(OtlpKind::Internal) => SpanKind::Internal,
        Ok(OtlpKind::Server) => SpanKind::Server,
        Ok(OtlpKind::Client) => SpanKind::Client,
        Ok(OtlpKind::Producer) => SpanKind::Producer,
        Ok(OtlpKind::Consumer) => SpanKind::Consumer,
        Ok(OtlpKind::Unspecified) | Err(_) => SpanKind::Unspecified,
    }
}

/// Every span of `req` as a [`SpanRow`] of session `session_id`.
pub fn convert(req: &ExportTraceServiceRequest, session_id: &str) -> Converted {
    let mut out = Converted::default();
    for rs in &req.resource_spans {
        let service = rs.resource.as_ref().and_then(|r| {
            r.attributes
                .iter()
                .find(|kv| kv.key == "service.name")
                .and_then(|kv| match any_value_json(kv.value.as_ref()) {
                    Value::String(s) => Some(s),
                    _ => None,
                })
        });
        for ss in &rs.scope_spans {
            for s in &ss.spans {
                let (Some(trace_id), Some(span_id)) = (id(&s.trace_id, 16), id(&s.span_id, 8))
                else {
                    out.malformed += 1;
                    continue;
                };
                let parent_span_id = if s.parent_span_id.is_empty() {
                    None
                } else if let Some(p) = id(&s.parent_span_id, 8) {
                    Some(p)
                } else {
                    out.malformed += 1;
                    continue;
                };
                let mut events: Vec<SpanEvent> = s
                    .events
                    .iter()
                    .map(|e| SpanEvent {
                        name: e.name.clone(),
                        time_unix_nano: e.time_unix_nano,
                        attributes: attributes(&e.attributes),
                    })
                    .collect();
                events.sort_by_key(|e| e.time_unix_nano);
                out.spans.push(SpanRow {
                    session_id: session_id.to_string(),
                    trace_id,
                    span_id,
                    parent_span_id,
                    name: s.name.clone(),
                    kind: kind(s.kind),
                    service: service.clone(),
                    start_unix_nano: s.start_time_unix_nano,
                    end_unix_nano: s.end_time_unix_nano,
                    error: s
                        .status
                        .as_ref()
                        .is_some_and(|st| st.code == StatusCode::Error as i32),
                    attributes: attributes(&s.attributes),
                    events,
                });
            }
        }
    }
    out
}

#[cfg(test)]
#[path = "convert_tests.rs"]
mod tests;
