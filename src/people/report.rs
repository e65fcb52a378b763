//! What a presence report says, read from what arrives: the presence URL's query and body (a
//! plain report, or an OwnTracks message in its HTTP mode) and a Home Assistant `person` state
//! on MQTT. Pure: no state, no I/O; the route and the MQTT bridge pass what they received and
//! record what comes back. Only home or away is read from a message: its coordinates (`lat`,
//! `lon`) and everything else in it are never looked at, so they cannot be kept.

use std::fmt;

use serde_json::Value;

use crate::state::PresenceSource;
use crate::util::{JsonMap, number};

/// One report read from the presence URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    /// Home (`true`) or away (`false`); `None` when the message changes nothing (another
    /// region, an OwnTracks `lwt` or `status`, an empty OwnTracks body).
    pub home: Option<bool>,
    pub source: PresenceSource,
    /// When it happened, in epoch seconds, when the message says (OwnTracks' `tst`): messages
    /// the app queued arrive late, and one older than the person's last report is stale.
    pub at_s: Option<i64>,
}

impl Report {
    /// Whether it came from OwnTracks, which is answered `[]` whatever it said.
    pub fn is_owntracks(&self) -> bool {
        self.source == PresenceSource::Owntracks
    }
}

/// Why a presence URL's request is refused (400, and nothing changes). Its message is the
/// answer's `error`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadReport {
    /// Neither `?home=` nor a JSON object saying `home`, nor an OwnTracks message: no body, a
    /// body that is not JSON or not an object, or a `home` that is not `true` or `false`.
    Expected,
    /// `?home=` with a value other than 1, 0, true or false.
    HomeParam,
    /// `?home=` and the body's `home` say different things.
    Disagree,
    /// `?home=` on a request from OwnTracks, which says where it is in its messages.
    HomeParamWithOwnTracks,
    /// An OwnTracks message encrypted with the app's secret key.
    Encrypted,
    /// An OwnTracks transition of the person's region whose `event` is not enter or leave.
    TransitionEvent,
    /// An OwnTracks location whose `inregions` is not a list of names.
    InRegions,
}

impl BadReport {
    pub fn message(&self) -> &'static str {
        match self {
            BadReport::Expected => {
                r#"Expected {"home": true} or {"home": false}, ?home=1 or ?home=0, or an OwnTracks message"#
            }
            BadReport::HomeParam => "?home= must be 1, 0, true or false",
            BadReport::Disagree => r#"?home= and the body's "home" disagree"#,
            BadReport::HomeParamWithOwnTracks => {
                "OwnTracks says where it is in its messages: take ?home= out of the URL set in the app"
            }
            BadReport::Encrypted => {
                "OwnTracks payload encryption is not supported: turn it off in the app, or use its HTTP mode without a secret"
            }
            BadReport::TransitionEvent => {
                r#"An OwnTracks transition's "event" must be "enter" or "leave""#
            }
            BadReport::InRegions => r#"OwnTracks "inregions" must be a list of region names"#,
        }
    }
}

impl fmt::Display for BadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for BadReport {}

/// Whether an OwnTracks region name (a transition's `desc`, an entry of `inregions`) is the
/// person's `region`: the same once trimmed, in any case.
pub fn same_region(region: &str, name: &str) -> bool {
    region.trim().to_lowercase() == name.trim().to_lowercase()
}

/// A `POST /api/presence/{person}` request's report.
///
/// - `home_param`: the `?home=` value as decoded from the query, if there is one: `1`, `0`,
///   `true` or `false` in any case.
/// - `body`: the request's body (the route bounds its size). Empty, or a JSON object: a plain
///   `{"home": true|false}` (other keys ignored), or an OwnTracks message (it has `_type`).
/// - `region`: the person's OwnTracks region name.
/// - `owntracks_headers`: the request carries OwnTracks' `X-Limit-U` or `X-Limit-D` header. It
///   is how an empty body from OwnTracks (sent when a friend is deleted, best ignored) is told
///   from a plain report that forgot to say anything: the first changes nothing and is answered
///   `[]`, the second is refused.
///
/// `?home=` with an OwnTracks message, or from OwnTracks, is refused: the app's URL should not
/// carry it, and either answer could be wrong. With a plain body it must agree with `home`;
/// a body without `home` (`{}`, as a shortcut with an empty JSON body sends) leaves it to
/// `?home=`.
pub fn http(
    home_param: Option<&str>,
    body: &[u8],
    region: &str,
    owntracks_headers: bool,
) -> Result<Report, BadReport> {
    let param = home_param.map(parse_home_param).transpose()?;
    let text = std::str::from_utf8(body).map_err(|_| BadReport::Expected)?;
    if text.trim().is_empty() {
        return match (param, owntracks_headers) {
            (Some(_), true) => Err(BadReport::HomeParamWithOwnTracks),
            (Some(home), false) => Ok(plain(Some(home))),
            (None, true) => Ok(Report {
                home: None,
                source: PresenceSource::Owntracks,
                at_s: None,
            }),
            (None, false) => Err(BadReport::Expected),
        };
    }
    let Ok(Value::Object(object)) = serde_json::from_str::<Value>(text) else {
        return Err(BadReport::Expected);
    };
    if object.contains_key("_type") {
        if param.is_some() {
            return Err(BadReport::HomeParamWithOwnTracks);
        }
        return owntracks(&object, region);
    }
    if param.is_some() && owntracks_headers {
        return Err(BadReport::HomeParamWithOwnTracks);
    }
    let said = match object.get("home") {
        None => None,
        Some(Value::Bool(home)) => Some(*home),
        Some(_) => return Err(BadReport::Expected),
    };
    match (param, said) {
        (None, None) => Err(BadReport::Expected),
        (Some(a), Some(b)) if a != b => Err(BadReport::Disagree),
        (a, b) => Ok(plain(a.or(b))),
    }
}

fn plain(home: Option<bool>) -> Report {
    Report {
        home,
        source: PresenceSource::Url,
        at_s: None,
    }
}

fn parse_home_param(value: &str) -> Result<bool, BadReport> {
    let value = value.trim();
    if value == "1" || value.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if value == "0" || value.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(BadReport::HomeParam)
    }
}

/// The latest `tst` this reads: the year 9999 (so milliseconds cannot overflow).
const LATEST_TST: f64 = 253_402_300_799.0;

/// An OwnTracks message (a JSON object with `_type`), as the booklet's JSON page describes it.
fn owntracks(message: &JsonMap, region: &str) -> Result<Report, BadReport> {
    let kind = message.get("_type").and_then(Value::as_str);
    let home = match kind {
        Some("transition") => transition(message, region)?,
        Some("location") => location(message, region)?,
        Some("encrypted") => return Err(BadReport::Encrypted),
        // lwt, status, waypoint(s), card, steps, beacon, cmd, and whatever comes next.
        Some(_) => None,
        None => return Err(BadReport::Expected),
    };
    // Seconds since the epoch; `util::number` also reads a number sent as a string.
    let at_s = message
        .get("tst")
        .and_then(number)
        .filter(|t| (0.0..=LATEST_TST).contains(t))
        .map(|t| t as i64);
    Ok(Report {
        home,
        source: PresenceSource::Owntracks,
        at_s,
    })
}

/// `enter` or `leave` of the person's region; another region, or none named, says nothing.
fn transition(message: &JsonMap, region: &str) -> Result<Option<bool>, BadReport> {
    let ours = message
        .get("desc")
        .and_then(Value::as_str)
        .is_some_and(|desc| same_region(region, desc));
    if !ours {
        return Ok(None);
    }
    match message.get("event").and_then(Value::as_str) {
        Some("enter") => Ok(Some(true)),
        Some("leave") => Ok(Some(false)),
        _ => Err(BadReport::TransitionEvent),
    }
}

/// Home when `inregions` names the person's region, away when it is there without it; a
/// location without `inregions` says nothing.
fn location(message: &JsonMap, region: &str) -> Result<Option<bool>, BadReport> {
    let Some(inregions) = message.get("inregions") else {
        return Ok(None);
    };
    let Value::Array(names) = inregions else {
        return Err(BadReport::InRegions);
    };
    let mut home = false;
    for name in names {
        let name = name.as_str().ok_or(BadReport::InRegions)?;
        home |= same_region(region, name);
    }
    Ok(Some(home))
}

/// Payloads longer than Home Assistant's states (255 characters) are not states.
const MAX_STATE_BYTES: usize = 255;

/// A Home Assistant `person` entity's state, published on `<prefix>/presence/<person>/state`:
/// `home` is home; `not_home` or a zone's name is away; `unknown`, `unavailable`, an empty or
/// blank payload, one that is not UTF-8 or longer than a state can be say nothing. Any case;
/// one pair of surrounding JSON quotes is taken off (`"home"`), as `mqtt_statestream` may send.
pub fn home_assistant(payload: &[u8]) -> Option<bool> {
    if payload.len() > MAX_STATE_BYTES {
        return None;
    }
    let text = std::str::from_utf8(payload).ok()?.trim();
    let text = text
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .unwrap_or(text)
        .trim();
    if text.is_empty()
        || text.eq_ignore_ascii_case("unknown")
        || text.eq_ignore_ascii_case("unavailable")
    {
        None
    } else {
        Some(text.eq_ignore_ascii_case("home"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(
        home: Option<bool>,
        source: PresenceSource,
        at_s: Option<i64>,
    ) -> Result<Report, BadReport> {
        Ok(Report { home, source, at_s })
    }

    fn plain_report(home: bool) -> Result<Report, BadReport> {
        report(Some(home), PresenceSource::Url, None)
    }

    /// A request from OwnTracks (with its headers) for a person whose region is `home`.
    fn owntracks(body: &str) -> Result<Report, BadReport> {
        http(None, body.as_bytes(), "home", true)
    }

    #[test]
    fn home_param_alone_needs_no_body() {
        for (value, home) in [
            ("1", true),
            ("0", false),
            ("true", true),
            ("false", false),
            ("TRUE", true),
            ("False", false),
        ] {
            assert_eq!(http(Some(value), b"", "home", false), plain_report(home));
            assert_eq!(http(Some(value), b" \n", "home", false), plain_report(home));
        }
    }

    #[test]
    fn any_other_home_param_is_refused() {
        for value in ["", "2", "yes", "no", "on", "home", "-1", "01", "t"] {
            assert_eq!(
                http(Some(value), b"", "home", false),
                Err(BadReport::HomeParam),
                "{value:?}"
            );
            // Even with a body that would say something.
            assert_eq!(
                http(Some(value), br#"{"home": true}"#, "home", false),
                Err(BadReport::HomeParam),
                "{value:?}"
            );
        }
    }

    #[test]
    fn a_json_body_says_home() {
        assert_eq!(
            http(None, br#"{"home": true}"#, "home", false),
            plain_report(true)
        );
        assert_eq!(
            http(None, br#"{"home":false}"#, "home", false),
            plain_report(false)
        );
        // Other keys are ignored, a person's name among them.
        assert_eq!(
            http(
                None,
                br#"{"person": "bob", "home": false, "x": [1]}"#,
                "home",
                false
            ),
            plain_report(false)
        );
        // It agrees with ?home=, or says nothing and leaves it to ?home=.
        assert_eq!(
            http(Some("1"), br#"{"home": true}"#, "home", false),
            plain_report(true)
        );
        assert_eq!(http(Some("0"), b"{}", "home", false), plain_report(false));
    }

    #[test]
    fn bodies_that_say_nothing_clear_are_refused() {
        for body in [
            "",
            "   ",
            "{}",
            r#"{"home": "true"}"#,
            r#"{"home": 1}"#,
            r#"{"home": null}"#,
            r#"{"Home": true}"#,
            "true",
            "home",
            "[]",
            r#"[{"home": true}]"#,
            r#""home""#,
            "null",
            "{",
            r#"{"home": true"#,
            r#"{"home": true} {"home": false}"#,
            "home=1",
        ] {
            assert_eq!(
                http(None, body.as_bytes(), "home", false),
                Err(BadReport::Expected),
                "{body:?}"
            );
        }
        assert_eq!(
            http(None, b"\xff\xfe{}", "home", false),
            Err(BadReport::Expected)
        );
        // A body that is not JSON is refused even when ?home= says something.
        assert_eq!(
            http(Some("1"), b"home", "home", false),
            Err(BadReport::Expected)
        );
        assert_eq!(
            http(Some("1"), br#"{"home": "yes"}"#, "home", false),
            Err(BadReport::Expected)
        );
    }

    #[test]
    fn home_param_and_body_must_agree() {
        assert_eq!(
            http(Some("1"), br#"{"home": false}"#, "home", false),
            Err(BadReport::Disagree)
        );
        assert_eq!(
            http(Some("false"), br#"{"home": true}"#, "home", false),
            Err(BadReport::Disagree)
        );
    }

    #[test]
    fn the_general_message_is_the_specs() {
        assert_eq!(
            BadReport::Expected.to_string(),
            r#"Expected {"home": true} or {"home": false}, ?home=1 or ?home=0, or an OwnTracks message"#
        );
        assert_eq!(
            BadReport::Encrypted.message(),
            "OwnTracks payload encryption is not supported: turn it off in the app, or use its HTTP mode without a secret"
        );
    }

    /// The booklet's transition, as OwnTracks on Android sends it.
    const LEAVE_HOME: &str = r#"{"_type":"transition","wtst":1444755752,"lat":49.1383109,
        "lon":13.4277182,"acc":481,"tst":1444818772,"tid":"21","event":"leave","desc":"Home",
        "t":"c","rid":"6da9cf"}"#;

    #[test]
    fn owntracks_transitions_of_the_region() {
        assert_eq!(
            owntracks(LEAVE_HOME),
            report(Some(false), PresenceSource::Owntracks, Some(1444818772))
        );
        // iOS, unencrypted, adds the topic it would publish on.
        let enter = r#"{"_type":"transition","tid":"ja","acc":65,"desc":"home ","event":"enter",
            "lat":51.5,"lon":-0.12,"tst":1795262650,"wtst":1700000000,"t":"c",
            "topic":"owntracks/jane/iphone"}"#;
        assert_eq!(
            owntracks(enter),
            report(Some(true), PresenceSource::Owntracks, Some(1795262650))
        );
        // The region is matched trimmed and in any case, on either side.
        assert_eq!(
            http(None, LEAVE_HOME.as_bytes(), "  HOME ", true).map(|r| r.home),
            Ok(Some(false))
        );
        // Without OwnTracks' headers (a proxy that drops them), the _type still says it.
        assert_eq!(
            http(None, LEAVE_HOME.as_bytes(), "home", false),
            report(Some(false), PresenceSource::Owntracks, Some(1444818772))
        );
    }

    #[test]
    fn owntracks_transitions_of_other_regions_say_nothing() {
        let work = LEAVE_HOME.replace(r#""desc":"Home""#, r#""desc":"Work""#);
        assert_eq!(
            owntracks(&work),
            report(None, PresenceSource::Owntracks, Some(1444818772))
        );
        let unnamed = LEAVE_HOME.replace(r#""desc":"Home","#, "");
        assert_eq!(owntracks(&unnamed).map(|r| r.home), Ok(None));
        // A region whose name only contains the person's does not count.
        let home_office = LEAVE_HOME.replace(r#""desc":"Home""#, r#""desc":"Home office""#);
        assert_eq!(owntracks(&home_office).map(|r| r.home), Ok(None));
        // Nor does a bad event in another region.
        let other = r#"{"_type":"transition","desc":"Gym","event":"wander","tst":1}"#;
        assert_eq!(owntracks(other).map(|r| r.home), Ok(None));
    }

    #[test]
    fn owntracks_transitions_of_the_region_need_enter_or_leave() {
        for body in [
            r#"{"_type":"transition","desc":"Home","event":"Enter","tst":1}"#,
            r#"{"_type":"transition","desc":"Home","event":"exit","tst":1}"#,
            r#"{"_type":"transition","desc":"Home","event":1,"tst":1}"#,
            r#"{"_type":"transition","desc":"Home","tst":1}"#,
        ] {
            assert_eq!(owntracks(body), Err(BadReport::TransitionEvent), "{body}");
        }
    }

    #[test]
    fn owntracks_locations_by_inregions() {
        let at_home = r#"{"_type":"location","acc":12,"alt":40,"batt":81,"conn":"w",
            "lat":51.5,"lon":-0.12,"tid":"ja","tst":1795262650,"vac":3,"vel":0,"t":"p",
            "inregions":["Garage","Home"],"inrids":["a1","b2"],"SSID":"home-net"}"#;
        assert_eq!(
            owntracks(at_home),
            report(Some(true), PresenceSource::Owntracks, Some(1795262650))
        );
        let elsewhere = at_home.replace(r#"["Garage","Home"]"#, r#"["Work"]"#);
        assert_eq!(owntracks(&elsewhere).map(|r| r.home), Ok(Some(false)));
        let nowhere = at_home.replace(r#"["Garage","Home"]"#, "[]");
        assert_eq!(owntracks(&nowhere).map(|r| r.home), Ok(Some(false)));
        // Without inregions a location says nothing (coordinates are never read).
        let bare = r#"{"_type":"location","lat":51.5,"lon":-0.12,"tst":1795262650,"tid":"ja"}"#;
        assert_eq!(
            owntracks(bare),
            report(None, PresenceSource::Owntracks, Some(1795262650))
        );
    }

    #[test]
    fn owntracks_inregions_must_be_names() {
        for inregions in [r#""Home""#, "null", r#"["Home", 1]"#, r#"{"Home": true}"#] {
            let body = format!(r#"{{"_type":"location","tst":1,"inregions":{inregions}}}"#);
            assert_eq!(owntracks(&body), Err(BadReport::InRegions), "{body}");
        }
    }

    #[test]
    fn other_owntracks_messages_say_nothing() {
        for body in [
            r#"{"_type":"lwt","tst":1795262650}"#,
            r#"{"_type":"status","android":{"hib":1}}"#,
            r#"{"_type":"waypoint","desc":"Home","lat":51.5,"lon":-0.12,"rad":100,"tst":1}"#,
            r#"{"_type":"card","name":"Jane","face":"iVBOR..."}"#,
            r#"{"_type":"cmd","action":"reportLocation"}"#,
            r#"{"_type":"steps","steps":120}"#,
            r#"{"_type":"some future kind","event":"leave","desc":"Home"}"#,
        ] {
            let got = owntracks(body).unwrap();
            assert_eq!(got.home, None, "{body}");
            assert!(got.is_owntracks(), "{body}");
        }
        assert_eq!(
            owntracks(r#"{"_type":"lwt","tst":1795262650}"#),
            report(None, PresenceSource::Owntracks, Some(1795262650))
        );
    }

    #[test]
    fn an_empty_body_from_owntracks_says_nothing() {
        for body in ["", " \r\n"] {
            assert_eq!(
                owntracks(body),
                report(None, PresenceSource::Owntracks, None)
            );
        }
        assert!(owntracks("").unwrap().is_owntracks());
    }

    #[test]
    fn encrypted_owntracks_messages_are_refused() {
        let body = r#"{"_type":"encrypted","data":"7sOLmn3Y+gGb6X3MW...=="}"#;
        assert_eq!(owntracks(body), Err(BadReport::Encrypted));
        assert_eq!(
            http(None, body.as_bytes(), "home", false),
            Err(BadReport::Encrypted)
        );
    }

    #[test]
    fn home_param_does_not_go_with_owntracks() {
        assert_eq!(
            http(Some("1"), LEAVE_HOME.as_bytes(), "home", true),
            Err(BadReport::HomeParamWithOwnTracks)
        );
        assert_eq!(
            http(Some("1"), LEAVE_HOME.as_bytes(), "home", false),
            Err(BadReport::HomeParamWithOwnTracks)
        );
        assert_eq!(
            http(Some("0"), b"", "home", true),
            Err(BadReport::HomeParamWithOwnTracks)
        );
        assert_eq!(
            http(Some("0"), br#"{"home":false}"#, "home", true),
            Err(BadReport::HomeParamWithOwnTracks)
        );
    }

    #[test]
    fn a_type_that_is_not_a_name_is_refused() {
        for body in [r#"{"_type":null}"#, r#"{"_type":1,"home":true}"#] {
            assert_eq!(owntracks(body), Err(BadReport::Expected), "{body}");
        }
    }

    #[test]
    fn owntracks_tst_as_numbers() {
        let tst = |value: &str| {
            owntracks(&format!(r#"{{"_type":"lwt","tst":{value}}}"#))
                .unwrap()
                .at_s
        };
        assert_eq!(tst("1795262650"), Some(1795262650));
        assert_eq!(tst("1795262650.75"), Some(1795262650));
        assert_eq!(tst("1.79526265e9"), Some(1795262650));
        assert_eq!(tst(r#""1795262650""#), Some(1795262650));
        assert_eq!(tst("0"), Some(0));
        for nothing in ["-1", "1e300", "null", "true", r#""soon""#, "[1]"] {
            assert_eq!(tst(nothing), None, "{nothing}");
        }
        assert_eq!(owntracks(r#"{"_type":"lwt"}"#).unwrap().at_s, None);
    }

    #[test]
    fn regions_compare_trimmed_in_any_case() {
        assert!(same_region("home", "Home"));
        assert!(same_region(" Home", "HOME "));
        assert!(same_region("Maison", "maison"));
        assert!(same_region("Дом", "дом"));
        assert!(!same_region("home", "Home office"));
        assert!(!same_region("home", ""));
    }

    #[test]
    fn home_assistant_states() {
        for (payload, home) in [
            ("home", Some(true)),
            ("Home", Some(true)),
            ("HOME", Some(true)),
            (r#""home""#, Some(true)),
            (" home\n", Some(true)),
            (r#" " home " "#, Some(true)),
            ("not_home", Some(false)),
            (r#""not_home""#, Some(false)),
            ("Work", Some(false)),
            ("Grandma's house", Some(false)),
            ("homeward", Some(false)),
            (r#"""home"""#, Some(false)),
            ("unknown", None),
            ("Unavailable", None),
            (r#""unknown""#, None),
            ("", None),
            ("   \t\n", None),
            (r#""""#, None),
        ] {
            assert_eq!(home_assistant(payload.as_bytes()), home, "{payload:?}");
        }
        assert_eq!(home_assistant(b"\xffhome"), None);
    }

    #[test]
    fn home_assistant_states_are_bounded() {
        let longest = "a".repeat(255);
        assert_eq!(home_assistant(longest.as_bytes()), Some(false));
        let padded = format!("home{}", " ".repeat(251));
        assert_eq!(home_assistant(padded.as_bytes()), Some(true));
        let too_long = format!("home{}", " ".repeat(252));
        assert_eq!(home_assistant(too_long.as_bytes()), None);
    }
}
