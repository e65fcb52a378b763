//! The characteristics hearth shows, as HAP defines them (type, format, permissions, unit and
//! bounds), and how a controller's value for a writable one becomes a thermostat core intent.
//! Which accessory holds which, at which instance id, is [`super::accessories`].

use serde_json::{Value, json};

use crate::thermostat::{Intent, Mode, SetpointMode, Step, settings};
use crate::util::JsonMap;

/// Paired read, paired write, notify: HAP's permission names.
const PR: &str = "pr";
const PW: &str = "pw";
const EV: &str = "ev";

/// What a characteristic is; each has one HAP type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Identify,
    Manufacturer,
    Model,
    Name,
    SerialNumber,
    FirmwareRevision,
    /// HAP Protocol Information's version.
    ProtocolVersion,
    CurrentHeatingCoolingState,
    TargetHeatingCoolingState,
    CurrentTemperature,
    TargetTemperature,
    TemperatureDisplayUnits,
    HeatingThreshold,
    CoolingThreshold,
    CurrentRelativeHumidity,
    /// The away switch's On.
    On,
    /// The Battery service's charge (%), whether it charges, and whether it is low.
    BatteryLevel,
    ChargingState,
    StatusLowBattery,
}

/// HAP's value formats, as its JSON names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Bool,
    Uint8,
    Float,
    String,
}

impl Format {
    fn name(self) -> &'static str {
        match self {
            Format::Bool => "bool",
            Format::Uint8 => "uint8",
            Format::Float => "float",
            Format::String => "string",
        }
    }
}

impl Kind {
    /// The short form of HAP's type UUID (`0000XXXX-0000-1000-8000-0026BB765291`).
    pub fn hap_type(self) -> &'static str {
        match self {
            Kind::Identify => "14",
            Kind::Manufacturer => "20",
            Kind::Model => "21",
            Kind::Name => "23",
            Kind::SerialNumber => "30",
            Kind::FirmwareRevision => "52",
            Kind::ProtocolVersion => "37",
            Kind::CurrentHeatingCoolingState => "F",
            Kind::TargetHeatingCoolingState => "33",
            Kind::CurrentTemperature => "11",
            Kind::TargetTemperature => "35",
            Kind::TemperatureDisplayUnits => "36",
            Kind::HeatingThreshold => "12",
            Kind::CoolingThreshold => "D",
            Kind::CurrentRelativeHumidity => "10",
            Kind::On => "25",
            Kind::BatteryLevel => "68",
            Kind::ChargingState => "8F",
            Kind::StatusLowBattery => "79",
        }
    }

    pub fn format(self) -> Format {
        match self {
            Kind::Identify | Kind::On => Format::Bool,
            Kind::Manufacturer
            | Kind::Model
            | Kind::Name
            | Kind::SerialNumber
            | Kind::FirmwareRevision
            | Kind::ProtocolVersion => Format::String,
            Kind::CurrentHeatingCoolingState
            | Kind::TargetHeatingCoolingState
            | Kind::TemperatureDisplayUnits
            | Kind::BatteryLevel
            | Kind::ChargingState
            | Kind::StatusLowBattery => Format::Uint8,
            Kind::CurrentTemperature
            | Kind::TargetTemperature
            | Kind::HeatingThreshold
            | Kind::CoolingThreshold
            | Kind::CurrentRelativeHumidity => Format::Float,
        }
    }

    pub fn perms(self) -> &'static [&'static str] {
        match self {
            Kind::Identify => &[PW],
            Kind::Manufacturer
            | Kind::Model
            | Kind::Name
            | Kind::SerialNumber
            | Kind::FirmwareRevision
            | Kind::ProtocolVersion => &[PR],
            Kind::CurrentHeatingCoolingState
            | Kind::CurrentTemperature
            | Kind::CurrentRelativeHumidity
            | Kind::BatteryLevel
            | Kind::ChargingState
            | Kind::StatusLowBattery => &[PR, EV],
            Kind::TargetHeatingCoolingState
            | Kind::TargetTemperature
            | Kind::TemperatureDisplayUnits
            | Kind::HeatingThreshold
            | Kind::CoolingThreshold
            | Kind::On => &[PR, PW, EV],
        }
    }

    pub fn readable(self) -> bool {
        self.perms().contains(&PR)
    }

    pub fn writable(self) -> bool {
        self.perms().contains(&PW)
    }

    pub fn notifies(self) -> bool {
        self.perms().contains(&EV)
    }
}

/// Bounds and step of a numeric characteristic; `valid` lists the values an enumeration allows.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bounds {
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub step: Option<f64>,
    pub valid: Option<Vec<u8>>,
}

/// One characteristic as a controller sees it now.
#[derive(Clone, Debug, PartialEq)]
pub struct Characteristic {
    pub iid: u64,
    pub kind: Kind,
    pub bounds: Bounds,
    /// `Null` for a write-only one (Identify).
    pub value: Value,
}

impl Characteristic {
    pub fn new(iid: u64, kind: Kind, value: Value) -> Characteristic {
        Characteristic {
            iid,
            kind,
            bounds: Bounds::default(),
            value,
        }
    }

    pub fn with(mut self, bounds: Bounds) -> Characteristic {
        self.bounds = bounds;
        self
    }

    /// The metadata HAP's `meta=1` and the attribute database carry.
    pub fn meta_into(&self, out: &mut JsonMap) {
        out.insert("format".into(), json!(self.kind.format().name()));
        if self.kind.format() == Format::Float
            && matches!(
                self.kind,
                Kind::CurrentTemperature
                    | Kind::TargetTemperature
                    | Kind::HeatingThreshold
                    | Kind::CoolingThreshold
            )
        {
            out.insert("unit".into(), json!("celsius"));
        }
        if matches!(
            self.kind,
            Kind::CurrentRelativeHumidity | Kind::BatteryLevel
        ) {
            out.insert("unit".into(), json!("percentage"));
        }
        let b = &self.bounds;
        for (name, v) in [
            ("minValue", b.min),
            ("maxValue", b.max),
            ("minStep", b.step),
        ] {
            if let Some(v) = v {
                out.insert(name.into(), json!(v));
            }
        }
        if let Some(valid) = &b.valid {
            out.insert("valid-values".into(), json!(valid));
        }
    }

    /// The whole characteristic, as `GET /accessories` lists it.
    pub fn to_json(&self) -> Value {
        let mut out = JsonMap::new();
        out.insert("iid".into(), json!(self.iid));
        out.insert("type".into(), json!(self.kind.hap_type()));
        out.insert("perms".into(), json!(self.kind.perms()));
        if self.kind.readable() {
            out.insert("value".into(), self.value.clone());
        }
        self.meta_into(&mut out);
        Value::Object(out)
    }
}

/// Why a controller's value is not taken, before the core sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refused {
    ReadOnly,
    InvalidValue,
}

/// What a write of `value` to `c` asks for: `Ok(None)` for Identify (nothing to change on a
/// thermostat), a refusal for a read-only characteristic or a value of the wrong kind. Numbers
/// out of the characteristic's bounds are passed on: the core clamps them as it does for
/// `/command`. The two thresholds written together are joined by the caller ([`joined`]).
pub fn intent(c: &Characteristic, value: &Value) -> Result<Option<Intent>, Refused> {
    if !c.kind.writable() {
        return Err(Refused::ReadOnly);
    }
    let number = || {
        value
            .as_f64()
            .filter(|x| x.is_finite())
            .ok_or(Refused::InvalidValue)
    };
    let enumerated = || {
        value
            .as_u64()
            .and_then(|v| u8::try_from(v).ok())
            .filter(|v| c.bounds.valid.as_ref().is_none_or(|ok| ok.contains(v)))
            .ok_or(Refused::InvalidValue)
    };
    Ok(Some(match c.kind {
        Kind::Identify => return boolean(value).map(|_| None),
        Kind::TargetTemperature => Intent::Target {
            celsius: number()?,
            mode: SetpointMode::Unchanged,
            step: Step::Exact,
        },
        Kind::HeatingThreshold => joined(Some(number()?), None),
        Kind::CoolingThreshold => joined(None, Some(number()?)),
        Kind::TargetHeatingCoolingState => Intent::Mode(match enumerated()? {
            0 => Mode::Off,
            1 => Mode::Heat,
            2 => Mode::Cool,
            3 => Mode::Range,
            _ => return Err(Refused::InvalidValue),
        }),
        Kind::TemperatureDisplayUnits => {
            let scale = match enumerated()? {
                0 => "C",
                1 => "F",
                _ => return Err(Refused::InvalidValue),
            };
            let mut fields = JsonMap::new();
            fields.insert("temperature_scale".into(), json!(scale));
            Intent::Settings(settings::validate(&fields).map_err(|_| Refused::InvalidValue)?)
        }
        Kind::On => Intent::Away(boolean(value)?),
        _ => return Err(Refused::ReadOnly),
    }))
}

/// The heat-cool setpoints as one intent (clamped as `/command` clamps them, the mode left as
/// it is): the Home app sends both when a person drags the range, and two separate commits
/// could refuse the first half (its low above the old high).
pub fn joined(low: Option<f64>, high: Option<f64>) -> Intent {
    Intent::Range {
        low,
        high,
        switch_mode: false,
        step: Step::Exact,
    }
}

/// HAP's booleans: `true`/`false` or 1/0 (controllers send either).
fn boolean(value: &Value) -> Result<bool, Refused> {
    match value {
        Value::Bool(b) => Ok(*b),
        Value::Number(n) if n.as_u64() == Some(0) => Ok(false),
        Value::Number(n) if n.as_u64() == Some(1) => Ok(true),
        _ => Err(Refused::InvalidValue),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_become_intents_or_refusals() {
        let mode =
            Characteristic::new(10, Kind::TargetHeatingCoolingState, json!(1)).with(Bounds {
                valid: Some(vec![0, 1]),
                ..Bounds::default()
            });
        assert_eq!(intent(&mode, &json!(0)), Ok(Some(Intent::Mode(Mode::Off))));
        assert_eq!(intent(&mode, &json!(3)), Err(Refused::InvalidValue));
        assert_eq!(intent(&mode, &json!("heat")), Err(Refused::InvalidValue));
        let current = Characteristic::new(11, Kind::CurrentTemperature, json!(20));
        assert_eq!(intent(&current, &json!(25)), Err(Refused::ReadOnly));
        let target = Characteristic::new(12, Kind::TargetTemperature, json!(20));
        assert!(matches!(
            intent(&target, &json!(40.0)),
            Ok(Some(Intent::Target { celsius, .. })) if celsius == 40.0
        ));
        assert_eq!(intent(&target, &json!(null)), Err(Refused::InvalidValue));
        let away = Characteristic::new(21, Kind::On, json!(false));
        assert_eq!(intent(&away, &json!(1)), Ok(Some(Intent::Away(true))));
        assert_eq!(intent(&away, &json!(2)), Err(Refused::InvalidValue));
        let identify = Characteristic::new(2, Kind::Identify, Value::Null);
        assert_eq!(intent(&identify, &json!(true)), Ok(None));
    }

    #[test]
    fn metadata_names_units_and_bounds() {
        let c = Characteristic::new(12, Kind::TargetTemperature, json!(21)).with(Bounds {
            min: Some(7.5),
            max: Some(35.0),
            step: Some(0.5),
            valid: None,
        });
        let j = c.to_json();
        assert_eq!(j["type"], "35");
        assert_eq!(j["perms"], json!(["pr", "pw", "ev"]));
        assert_eq!(j["unit"], "celsius");
        assert_eq!(j["minValue"], json!(7.5));
        let identify = Characteristic::new(2, Kind::Identify, Value::Null).to_json();
        assert!(identify.get("value").is_none());
    }
}
