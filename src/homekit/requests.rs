//! The two bodies a controller sends about characteristics: a read's query string and a
//! write's JSON, parsed into what the bridge acts on (nothing here knows of thermostats).

use serde_json::Value;

use super::Address;

/// `id=1.2,2.11&meta=1&perms=1&type=1&ev=1`.
pub struct ReadQuery {
    pub ids: Vec<Address>,
    pub meta: bool,
    pub perms: bool,
    pub hap_type: bool,
    pub ev: bool,
}

impl ReadQuery {
    pub fn parse(query: &str) -> Option<ReadQuery> {
        let mut q = ReadQuery {
            ids: Vec::new(),
            meta: false,
            perms: false,
            hap_type: false,
            ev: false,
        };
        for pair in query.split('&').filter(|p| !p.is_empty()) {
            let (name, value) = pair.split_once('=').unwrap_or((pair, ""));
            let on = value == "1" || value.eq_ignore_ascii_case("true");
            match name {
                "id" => {
                    for id in value.split(',') {
                        let (aid, iid) = id.split_once('.')?;
                        q.ids.push((aid.parse().ok()?, iid.parse().ok()?));
                    }
                }
                "meta" => q.meta = on,
                "perms" => q.perms = on,
                "type" => q.hap_type = on,
                "ev" => q.ev = on,
                _ => {}
            }
        }
        (!q.ids.is_empty()).then_some(q)
    }
}

/// One entry of a `PUT /characteristics` body.
pub struct WriteItem {
    pub aid: u64,
    pub iid: u64,
    pub value: Option<Value>,
    pub ev: Option<bool>,
    /// `"r": true`: answer with the value written.
    pub response: bool,
}

impl WriteItem {
    /// `{"characteristics":[{"aid","iid","value"?,"ev"?,"r"?}, ...]}`; `None` if it is not that.
    pub fn parse(body: &[u8]) -> Option<Vec<WriteItem>> {
        let doc: Value = serde_json::from_slice(body).ok()?;
        let list = doc.get("characteristics")?.as_array()?;
        if list.is_empty() {
            return None;
        }
        list.iter()
            .map(|item| {
                let ev = match item.get("ev") {
                    None => None,
                    Some(Value::Bool(b)) => Some(*b),
                    Some(v) => Some(v.as_u64()? != 0),
                };
                Some(WriteItem {
                    aid: item.get("aid")?.as_u64()?,
                    iid: item.get("iid")?.as_u64()?,
                    value: item.get("value").cloned(),
                    ev,
                    response: item.get("r").and_then(Value::as_bool).unwrap_or(false),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_queries() {
        let q = ReadQuery::parse("id=1.2,2.11&meta=1&perms=1&type=1&ev=1").unwrap();
        assert_eq!(q.ids, vec![(1, 2), (2, 11)]);
        assert!(q.meta && q.perms && q.hap_type && q.ev);
        for bad in ["", "id=", "id=1", "id=1.x", "meta=1", "id=1.2,"] {
            assert!(ReadQuery::parse(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn write_bodies() {
        let items = WriteItem::parse(
            br#"{"characteristics":[{"aid":2,"iid":12,"value":21.5},{"aid":2,"iid":11,"ev":1,"r":true}]}"#,
        )
        .unwrap();
        assert_eq!(items.len(), 2);
        assert_eq!(items[0].value, Some(json!(21.5)));
        assert_eq!(items[1].ev, Some(true));
        assert!(items[1].response);
        for bad in [
            &b"{"[..],
            br#"{"characteristics":[]}"#,
            br#"{"characteristics":[{"aid":2}]}"#,
            br#"{"characteristics":[{"aid":"2","iid":1}]}"#,
            br#"[]"#,
        ] {
            assert!(WriteItem::parse(bad).is_none());
        }
    }
}
