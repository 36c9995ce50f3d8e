//! The catalog's encodings and checks.

use super::*;

#[test]
fn layouts_parse_from_their_names_and_print_back() {
    for text in [
        "embed",
        "reference",
        "subset:5",
        "outlier:0",
        "outlier:1000",
        "bucket:60",
        "bucket:60:3600",
        "bucket:1:9223372036854775807",
    ] {
        assert_eq!(Layout::parse(text).unwrap().describe(), text);
    }
}

/// `spec` in the mapped form: its newest form without the rollup spans at its end.
fn mapped_bytes(spec: &CollectionSpec) -> Vec<u8> {
    let mut out = Vec::new();
    spec.encode(&mut out);
    let back = CollectionSpec::decode(&mut Bytes::from(out.clone()), SpecForm::RolledUp);
    assert_eq!(&back.unwrap(), spec);
    let rollups = out.split_off(out.len() - 8 * spec.arrays().len());
    for (span, array) in rollups.chunks(8).zip(spec.arrays()) {
        let span = i64::from_le_bytes(span.try_into().unwrap());
        assert_eq!(span, array.rollup.unwrap_or(0));
    }
    out
}

#[test]
fn rollups_read_back_and_are_checked() {
    let hourly = Layout::Bucket {
        max_items: 60,
        span: Some(3600),
    };
    let spec = CollectionSpec::new("sensors")
        .array("a", hourly)
        .array("b", hourly)
        .rollup("b", 86_400);
    let mut out = Vec::new();
    spec.encode(&mut out);
    let back = CollectionSpec::decode(&mut Bytes::from(out.clone()), SpecForm::RolledUp).unwrap();
    assert_eq!(back.arrays()[1].rollup, Some(86_400));
    assert_eq!(back, spec);
    assert_eq!(mapped_bytes(&spec).len(), out.len() - 16);
    for cut in out.len() - 16..out.len() {
        let short =
            CollectionSpec::decode(&mut Bytes::copy_from_slice(&out[..cut]), SpecForm::RolledUp);
        assert!(
            short.unwrap_err().contains("rollups truncated"),
            "cut at {cut}"
        );
    }
    // A negative span, or one on an array that is not a bucket array, is refused.
    let mut negative = out.clone();
    let at = negative.len() - 8;
    negative[at..].copy_from_slice(&(-5i64).to_le_bytes());
    let error = CollectionSpec::decode(&mut Bytes::from(negative), SpecForm::RolledUp);
    assert!(error.unwrap_err().contains("positive"));
    let embed = CollectionSpec::new("c")
        .array("a", Layout::Embed)
        .rollup("a", 60);
    assert!(
        embed
            .validate()
            .unwrap_err()
            .to_string()
            .contains("only a bucket array")
    );
}

#[test]
fn specs_read_back_in_every_form() {
    let spec = CollectionSpec::new("sensors")
        .array_with_measures("readings", Layout::Subset { keep: 3 }, ["t", "h"])
        .array("tags", Layout::Embed);
    for format in [DocumentFormat::Bytes, DocumentFormat::Bson] {
        let spec = spec.clone().stored_as(format);
        let out = mapped_bytes(&spec);
        assert_eq!(out.last(), Some(&0), "no document map");
        let back = CollectionSpec::decode(&mut Bytes::from(out.clone()), SpecForm::Mapped);
        assert_eq!(back.unwrap(), spec);
        // The formatted form is the same bytes without the map's tag.
        let formatted = Bytes::copy_from_slice(&out[..out.len() - 1]);
        assert_eq!(formatted.last(), Some(&format.tag()));
        let back = CollectionSpec::decode(&mut formatted.clone(), SpecForm::Formatted);
        assert_eq!(back.unwrap(), spec);
        // The measured form is the same bytes without the format: a `Bytes` collection.
        let measured = Bytes::copy_from_slice(&out[..out.len() - 2]);
        let back = CollectionSpec::decode(&mut measured.clone(), SpecForm::Measured).unwrap();
        assert_eq!(back, spec.clone().stored_as(DocumentFormat::Bytes));
        // Cut short, or with a format no build knows, it is refused.
        let error = CollectionSpec::decode(&mut measured.clone(), SpecForm::Formatted);
        assert!(error.unwrap_err().contains("truncated"));
        let error = CollectionSpec::decode(&mut formatted.clone(), SpecForm::Mapped);
        assert!(error.unwrap_err().contains("truncated"));
        let mut unknown = formatted.to_vec();
        *unknown.last_mut().unwrap() = 7;
        let error = CollectionSpec::decode(&mut Bytes::from(unknown), SpecForm::Formatted);
        assert!(error.unwrap_err().contains("unknown document format 7"));
    }
}

#[test]
fn document_maps_read_back_and_are_checked() {
    let hourly = Layout::Bucket {
        max_items: 360,
        span: Some(3_600_000),
    };
    let spec = CollectionSpec::new("sensors")
        .stored_as(DocumentFormat::Bson)
        .array_with_measures("readings", hourly, ["temp", "rh"])
        .array("tags", Layout::Embed);
    let map = DocumentMap::new("_id")
        .array("readings", Some("t"), true)
        .array("tags", None, false);
    let mapped = spec.clone().mapped(map.clone());
    mapped.validate().unwrap();
    let out = mapped_bytes(&mapped);
    let back = CollectionSpec::decode(&mut Bytes::from(out.clone()), SpecForm::Mapped).unwrap();
    assert_eq!(back, mapped);
    let read = back.document_map().unwrap();
    assert_eq!(read.key_field(), "_id");
    assert_eq!(read.item_key_field("readings"), Some("t"));
    assert_eq!(read.item_key_field("tags"), None);
    assert_eq!(read.item_key_field("absent"), None);
    assert!(read.measures_from_fields("readings"));
    assert!(!read.measures_from_fields("tags"));
    // A conflict's message tells two specs apart by their maps too.
    assert_eq!(
        mapped.describe(),
        "readings=bucket:360:3600000 [temp rh], tags=embed, stored as bson, keyed by _id, \
         readings keyed by t with measures from fields"
    );
    assert_eq!(
        spec.describe(),
        "readings=bucket:360:3600000 [temp rh], tags=embed, stored as bson"
    );
    // Every cut of the bytes is refused, never misread.
    for cut in 0..out.len() {
        let short =
            CollectionSpec::decode(&mut Bytes::copy_from_slice(&out[..cut]), SpecForm::Mapped);
        assert!(short.is_err(), "cut at {cut}");
    }
    // Flags no build knows, and a map tag no build knows, are refused.
    let mut flags = out.clone();
    *flags.last_mut().unwrap() = 2;
    let error = CollectionSpec::decode(&mut Bytes::from(flags), SpecForm::Mapped);
    assert!(error.unwrap_err().contains("flags"));
    // Checked against the spec: bytes format, an unknown array, an array twice, bad names.
    let schema = |spec: CollectionSpec| spec.validate().unwrap_err().to_string();
    let on_bytes = spec.clone().stored_as(DocumentFormat::Bytes).mapped(map);
    assert!(schema(on_bytes).contains("stored as bson"));
    let unknown = spec
        .clone()
        .mapped(DocumentMap::new("_id").array("nope", None, true));
    assert!(schema(unknown).contains("lacks"));
    let twice = DocumentMap::new("_id")
        .array("tags", None, true)
        .array("tags", None, false);
    assert!(schema(spec.clone().mapped(twice)).contains("twice"));
    assert!(schema(spec.clone().mapped(DocumentMap::new(""))).contains("empty"));
    let nul = DocumentMap::new("_id").array("tags", Some("a\0b"), false);
    assert!(schema(spec.clone().mapped(nul)).contains("NUL"));
    let long = DocumentMap::new("k".repeat(256));
    assert!(schema(spec.mapped(long)).contains("longer than 255"));
}

#[test]
fn bad_layouts_say_what_is_wrong() {
    let error = |text: &str| Layout::parse(text).unwrap_err();
    assert!(
        error("bucket:10:-5").contains("cannot be negative"),
        "{}",
        error("bucket:10:-5")
    );
    assert!(error("bucket:10:0").contains("must be positive"));
    assert!(error("bucket:10:x").contains("whole number"));
    assert!(error("bucket:10:9223372036854775808").contains("too large"));
    assert!(error("subset:0").contains("from 1"));
    assert!(error("subset:-1").contains("cannot be negative"));
    assert!(error("subset:4294967296").contains("too large"));
    assert!(error("subset").contains("needs N"));
    assert!(error("subset:1:2").contains("too many parts"));
    assert!(error("tree").contains("unknown layout"));
}
