//! Who may see a thermostat: the one rule every surface asks ([`sight`]), for a thermostat and
//! a [`Viewer`], answering whether the viewer lists it, may address it (read it by its serial or
//! id), may command it, and why. No surface decides this for itself; docs/hosted-api.md ("Who
//! sees a thermostat") has the table of the answers, and `tests/it/visibility.rs` walks every
//! surface through it.
//!
//! The answer follows from whose the thermostat is ([`Standing`]):
//! - **claimed** (someone claimed it with its entry key) or, in open mode, **the default
//!   user's** (never claimed, never removed): the home's. Every viewer of the home (the control
//!   port, Apple Home, MQTT, alerts) lists, reads and commands it; a key's user does as far as
//!   its relation, its scopes and its serial list allow ([`super::access::check`]).
//! - **unclaimed** with pairing required (it may be waiting with an entry code): nobody's.
//!   Nobody lists, reads or commands it; to the control port it is as unknown as a serial never
//!   seen. It is listed only by `GET /api/waiting`, which shows what waits to be claimed.
//! - **released** (its owner removed it, in either mode): nobody's. It keeps operating (see
//!   [`mod@super::release`]), but nobody lists or commands it. In open mode the control port
//!   may still read it by its serial, since anyone on the LAN may add it again
//!   (`POST /api/adopt`); with pairing required it is unknown there too.

use super::access::{Denied, Need, Relation, check, relation};
use crate::state::{Accounts, ApiKey, State};

/// Who is looking at a thermostat.
#[derive(Clone, Copy, Debug)]
pub enum Viewer<'a> {
    /// The control port (8082 outside `/api/v1`): the page, `/status`, `/api/devices`,
    /// `/command`, `/api/history`, the live event stream, `/metrics`. Open to the LAN, or with
    /// `CONTROL_REQUIRE_KEY` to the default user's unlimited key: the same view either way.
    Lan,
    /// A key of the hosted API (`/api/v1`), acting for its user within its scopes and serials.
    Key(&'a ApiKey),
    /// A controller paired with the HomeKit bridge (Apple Home).
    HomeKit,
    /// The MQTT bridge (whoever may subscribe on the broker, Home Assistant).
    Mqtt,
    /// The alert rules and the people their messages reach (ntfy, a webhook).
    Alerts,
    /// The presence rule (`crate::people`), making a home's thermostats away or home.
    Presence,
}

/// Whose a thermostat is, as the accounts say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Standing {
    /// A user claimed it with its entry key.
    Claimed,
    /// Open mode, never claimed and never removed: the default user's.
    DefaultUser,
    /// Pairing required and never claimed (it may be waiting with an entry code): nobody's.
    Unclaimed,
    /// Its owner removed it: nobody's, though it keeps operating.
    Released,
}

impl Standing {
    /// Whether the thermostat belongs to the home (someone owns it).
    pub fn owned(self) -> bool {
        matches!(self, Standing::Claimed | Standing::DefaultUser)
    }

    /// Where it stands, in a word (the visibility table's rows).
    pub fn as_str(self) -> &'static str {
        match self {
            Standing::Claimed => "claimed",
            Standing::DefaultUser => "default user",
            Standing::Unclaimed => "unclaimed",
            Standing::Released => "released",
        }
    }
}

/// What a viewer may do with one thermostat, and why.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sight {
    /// Whose the thermostat is.
    pub standing: Standing,
    /// A key's user's relation to it (`None` for the other viewers, and for a key's user
    /// who has none).
    pub relation: Option<Relation>,
    /// Whether the viewer's lists show it (`/api/devices`, `/metrics`, HomeKit's accessories,
    /// MQTT's entities, `/api/v1/devices`).
    pub listed: bool,
    /// Reading it by its serial or id; refused as for an unknown thermostat
    /// ([`Denied::NoRelation`]) or, for a key, by its limits ([`Denied::NotAllowed`]).
    pub read: Result<(), Denied>,
    /// Commanding it.
    pub write: Result<(), Denied>,
    /// Removing it (unlinking it from its owner).
    pub unlink: Result<(), Denied>,
}

impl Sight {
    /// Whether reads of it by serial or id are answered.
    pub fn addressable(&self) -> bool {
        self.read.is_ok()
    }

    /// Whether commands to it are taken.
    pub fn commandable(&self) -> bool {
        self.write.is_ok()
    }

    /// Whether the viewer may do `need`, or why not.
    pub fn allows(&self, need: Need) -> Result<(), Denied> {
        match need {
            Need::Read => self.read,
            Need::Write => self.write,
            Need::Unlink => self.unlink,
        }
    }
}

/// Whose `serial` is: its claimer's; else, with pairing not required and it not removed, the
/// default user's; else nobody's, unclaimed or released.
pub fn standing(accounts: &Accounts, serial: &str, require_pairing: bool) -> Standing {
    if accounts.owner_of(serial).is_some() {
        Standing::Claimed
    } else if accounts.is_released(serial) {
        Standing::Released
    } else if require_pairing {
        Standing::Unclaimed
    } else {
        Standing::DefaultUser
    }
}

/// The rule: what `viewer` may do with `serial` (see the module comment).
pub fn sight(
    accounts: &Accounts,
    serial: &str,
    viewer: Viewer<'_>,
    require_pairing: bool,
) -> Sight {
    let standing = standing(accounts, serial, require_pairing);
    let home = if standing.owned() {
        Ok(())
    } else {
        Err(Denied::NoRelation)
    };
    match viewer {
        Viewer::Key(key) => {
            let open_mode = !require_pairing;
            let may = |need| check(accounts, key, serial, need, open_mode).map(|_| ());
            let relation = relation(accounts, serial, &key.user, open_mode);
            Sight {
                standing,
                relation,
                listed: relation.is_some() && key.covers(serial),
                read: may(Need::Read),
                write: may(Need::Write),
                unlink: may(Need::Unlink),
            }
        }
        Viewer::Lan => Sight {
            standing,
            relation: None,
            listed: standing.owned(),
            // In open mode a released thermostat may be looked at: anyone on the LAN may add it.
            read: match standing {
                Standing::Released if !require_pairing => Ok(()),
                _ => home,
            },
            write: home,
            unlink: home,
        },
        Viewer::HomeKit | Viewer::Mqtt | Viewer::Alerts | Viewer::Presence => Sight {
            standing,
            relation: None,
            listed: standing.owned(),
            read: home,
            write: home,
            unlink: home,
        },
    }
}

/// The rule with its mode: what the server's `REQUIRE_DEVICE_PAIRING` makes of [`sight`], for
/// the surfaces, which hold one of these rather than the setting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Visibility {
    pub require_pairing: bool,
}

impl Visibility {
    pub fn new(require_pairing: bool) -> Visibility {
        Visibility { require_pairing }
    }

    /// [`sight`] under accounts already read.
    pub fn of(&self, accounts: &Accounts, serial: &str, viewer: Viewer<'_>) -> Sight {
        sight(accounts, serial, viewer, self.require_pairing)
    }

    /// [`sight`] of one thermostat.
    pub fn sight(&self, state: &State, serial: &str, viewer: Viewer<'_>) -> Sight {
        state.accounts(|a| self.of(a, serial, viewer))
    }

    /// The serials of `serials` that `viewer` lists, in their order (one read of the accounts).
    pub fn listed(&self, state: &State, serials: Vec<String>, viewer: Viewer<'_>) -> Vec<String> {
        state.accounts(|a| {
            serials
                .into_iter()
                .filter(|s| self.of(a, s, viewer).listed)
                .collect()
        })
    }

    /// The serials of `serials` that `viewer` may read, in their order.
    pub fn addressable(
        &self,
        state: &State,
        serials: Vec<String>,
        viewer: Viewer<'_>,
    ) -> Vec<String> {
        state.accounts(|a| {
            serials
                .into_iter()
                .filter(|s| self.of(a, s, viewer).addressable())
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{Op, Owner, Scope, Share, ShareAccess};

    const S: &str = "02AA01AC0000SIM1";

    fn key(user: &str) -> ApiKey {
        super::super::access::tests::key(user, &[Scope::Read, Scope::Write], &[])
    }

    /// The thermostat as each row of the table has it.
    fn accounts(row: &str) -> Accounts {
        let mut a = Accounts::default();
        let owner = |a: &mut Accounts, user: &str| {
            a.apply(&Op::SetOwner {
                serial: S.into(),
                owner: Some(Owner {
                    user: user.into(),
                    since_ms: 0,
                }),
            })
        };
        match row {
            "never claimed" => {}
            "claimed" => owner(&mut a, "alice"),
            "shared" => {
                owner(&mut a, "alice");
                a.apply(&Op::SetShare {
                    serial: S.into(),
                    user: "bob".into(),
                    share: Some(Share {
                        access: ShareAccess::Read,
                        since_ms: 0,
                    }),
                });
            }
            "removed" => a.apply(&Op::SetReleased {
                serial: S.into(),
                released: true,
            }),
            other => panic!("no row {other}"),
        }
        a
    }

    /// `(listed, read, write)` as one string, `-` for no: `lrw`, `-r-`, ...
    fn answer(s: Sight) -> String {
        [
            (s.listed, 'l'),
            (s.read.is_ok(), 'r'),
            (s.write.is_ok(), 'w'),
        ]
        .iter()
        .map(|(yes, c)| if *yes { *c } else { '-' })
        .collect()
    }

    #[test]
    fn the_table() {
        let (alice, bob, owner) = (key("alice"), key("bob"), key("owner"));
        // Row, mode (pairing required?), then Lan, bridges, alice's key, bob's key, owner's key.
        let table = [
            ("never claimed", false, "lrw lrw --- --- lrw"),
            ("never claimed", true, "--- --- --- --- ---"),
            ("claimed", false, "lrw lrw lrw --- ---"),
            ("claimed", true, "lrw lrw lrw --- ---"),
            ("shared", false, "lrw lrw lrw lr- ---"),
            ("shared", true, "lrw lrw lrw lr- ---"),
            ("removed", false, "-r- --- --- --- ---"),
            ("removed", true, "--- --- --- --- ---"),
        ];
        for (row, pairing, want) in table {
            let a = accounts(row);
            let got: Vec<String> = [
                Viewer::Lan,
                Viewer::Mqtt,
                Viewer::Key(&alice),
                Viewer::Key(&bob),
                Viewer::Key(&owner),
            ]
            .into_iter()
            .map(|v| answer(sight(&a, S, v, pairing)))
            .collect();
            assert_eq!(got.join(" "), want, "{row}, pairing {pairing}");
            for bridge in [Viewer::HomeKit, Viewer::Alerts, Viewer::Presence] {
                assert_eq!(
                    sight(&a, S, bridge, pairing),
                    sight(&a, S, Viewer::Mqtt, pairing)
                );
            }
        }
    }

    #[test]
    fn why_is_told() {
        let a = accounts("shared");
        let bob = sight(&a, S, Viewer::Key(&key("bob")), true);
        assert_eq!(bob.standing, Standing::Claimed);
        assert_eq!(bob.relation, Some(Relation::Shared(ShareAccess::Read)));
        assert_eq!(bob.write, Err(Denied::NotAllowed));
        assert_eq!(bob.unlink, Err(Denied::OwnerOnly));
        let carol = sight(&a, S, Viewer::Key(&key("carol")), true);
        assert_eq!(carol.read, Err(Denied::NoRelation));
        assert_eq!(
            sight(&accounts("removed"), S, Viewer::Lan, false).standing,
            Standing::Released
        );
        assert_eq!(
            sight(&accounts("never claimed"), S, Viewer::Lan, true).standing,
            Standing::Unclaimed
        );
        // A key limited to other serials: its user owns it, it is not listed, and reads are
        // refused by the key's limits, not as unknown.
        let mut limited = key("owner");
        limited.serials = vec!["02AA01AC0000OTHR".into()];
        let s = sight(&accounts("never claimed"), S, Viewer::Key(&limited), false);
        assert_eq!(s.relation, Some(Relation::Owner));
        assert!(!s.listed);
        assert_eq!(s.read, Err(Denied::NotAllowed));
    }
}
