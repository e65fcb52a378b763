//! A thermostat's display name, from its own buckets.

use serde_json::Value;

use super::view::View;

/// The name a user gave the thermostat: `shared.label`, else `shared.name` (non-empty), else
/// the room it was installed in (`device.where_id`); `None` when it was never named.
pub fn name(view: &View) -> Option<String> {
    let shared = |f: &str| view.shared_field(f).and_then(Value::as_str);
    [shared("label"), shared("name")]
        .into_iter()
        .flatten()
        .find(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| {
            view.device_field("where_id")
                .and_then(Value::as_str)
                .and_then(room_name)
                .map(str::to_string)
        })
}

/// The room a `where_id` (`00000000-0000-0000-0000-0001000000XX`) names.
pub fn room_name(where_id: &str) -> Option<&'static str> {
    let code = where_id.strip_prefix("00000000-0000-0000-0000-0001000000")?;
    Some(match code.to_ascii_lowercase().as_str() {
        "00" => "Entryway",
        "01" => "Basement",
        "02" => "Hallway",
        "03" => "Den",
        "04" => "Attic",
        "05" => "Master Bedroom",
        "06" => "Downstairs",
        "07" => "Garage",
        "09" => "Bathroom",
        "0a" => "Kitchen",
        "0b" => "Family Room",
        "0c" => "Living Room",
        "0d" => "Bedroom",
        "0e" => "Office",
        "0f" => "Upstairs",
        "10" => "Dining Room",
        "11" => "Backyard",
        "12" => "Driveway",
        "13" => "Front Yard",
        "14" => "Outside",
        "15" => "Guest House",
        "16" => "Shed",
        "17" => "Deck",
        "18" => "Patio",
        "1a" => "Guest Room",
        "1b" => "Front Door",
        "1c" => "Side Door",
        "1d" => "Back Door",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rooms() {
        assert_eq!(
            room_name("00000000-0000-0000-0000-000100000006"),
            Some("Downstairs")
        );
        assert_eq!(room_name("00000000-0000-0000-0000-000100000008"), None);
        assert_eq!(room_name("x"), None);
    }
}
