//! The command line's account commands: `hearth users`, `keys`, `claim`, `share`, `unshare`
//! and `devices`; and `hearth homekit code|unlock|reset` ([`homekit`]).
//!
//! They work whether or not a server is running on the data directory, and never with two
//! processes writing the store: the command first tries to open the store itself (taking its
//! lock); if a running server holds the lock, the command is sent to that server over a Unix
//! socket in the data directory ([`socket`]) and the server runs it. Either way the same
//! [`run`] does the work, so a key created while the server runs works at once.
//!
//! Which of the two happened is said on the way out ([`note`]): the data directory's full path,
//! and whether a running server took the change. A key written to a directory no server runs
//! on (`./data` while `hearth demo` runs on its own) would otherwise fail with a bare 401.

#[cfg(feature = "homekit")]
pub(crate) mod homekit;
pub(crate) mod onboarding;
pub mod socket;
pub(crate) mod table;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::accounts::access::effective_owner;
use crate::accounts::keys::{self, KeySpec};
use crate::accounts::{self, AccountsError};
use crate::hub::Hub;
use crate::state::{ShareAccess, State};
use crate::store::{StoreError, files};
use crate::thermostat::{self, names};
use crate::util::clock::Clock;
use table::{Table, when};

/// One command, as the CLI sends it to a running server.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum AdminRequest {
    UsersAdd {
        name: String,
    },
    UsersList,
    UsersRemove {
        name: String,
    },
    KeysCreate {
        user: String,
        name: String,
        scopes: String,
        serials: Vec<String>,
        expires_days: Option<u32>,
    },
    KeysList {
        user: Option<String>,
    },
    KeysRevoke {
        id: String,
    },
    Claim {
        code: String,
        user: String,
    },
    Share {
        serial: String,
        with: String,
        access: String,
    },
    Unshare {
        serial: String,
        with: String,
    },
    Devices,
    /// What the server knows of the thermostats at these addresses (for `hearth scan` and
    /// `hearth point`), as JSON: address → [`crate::onboarding::Known`].
    ThermostatsAt {
        ips: Vec<std::net::Ipv4Addr>,
    },
    /// `hearth people add`.
    PeopleAdd {
        name: String,
        user: String,
        region: Option<String>,
    },
    PeopleList {
        user: Option<String>,
    },
    PeopleRemove {
        name: String,
    },
    /// `hearth people token NAME`: a new presence token (the old one stops working).
    PeopleToken {
        name: String,
    },
    /// `hearth homekit code`.
    HomekitCode,
    /// `hearth homekit unlock`.
    HomekitUnlock,
    /// `hearth homekit reset`.
    HomekitReset,
}

impl AdminRequest {
    /// Commands that only read; they never create a missing data directory.
    pub fn reads_only(&self) -> bool {
        matches!(
            self,
            AdminRequest::UsersList
                | AdminRequest::KeysList { .. }
                | AdminRequest::PeopleList { .. }
                | AdminRequest::Devices
                | AdminRequest::ThermostatsAt { .. }
                | AdminRequest::HomekitCode
        )
    }

    #[cfg(feature = "homekit")]
    fn is_homekit(&self) -> bool {
        matches!(
            self,
            AdminRequest::HomekitCode | AdminRequest::HomekitUnlock | AdminRequest::HomekitReset
        )
    }
}

/// When a thermostat last made a request (ms), as the running server knows it.
pub type LastSeen<'a> = &'a dyn Fn(&str) -> Option<i64>;

/// What a command needs: the state, whether pairing is off, (when a server runs) when each
/// thermostat was last heard from, and the HomeKit identity (for the `homekit` commands).
pub struct Context<'a> {
    pub state: &'a State,
    pub open_mode: bool,
    pub last_seen: Option<LastSeen<'a>>,
    #[cfg(feature = "homekit")]
    pub homekit: Option<&'a crate::hap::Identity>,
}

/// Runs a command and returns the text to print, or the error to print.
pub fn run(ctx: &Context<'_>, request: &AdminRequest) -> Result<String, String> {
    match request {
        #[cfg(feature = "homekit")]
        AdminRequest::HomekitCode => homekit::code(ctx.homekit),
        #[cfg(feature = "homekit")]
        AdminRequest::HomekitUnlock => homekit::unlock(ctx.homekit),
        #[cfg(feature = "homekit")]
        AdminRequest::HomekitReset => homekit::reset(ctx.homekit),
        #[cfg(not(feature = "homekit"))]
        AdminRequest::HomekitCode | AdminRequest::HomekitUnlock | AdminRequest::HomekitReset => {
            Err("this build of hearth has no HomeKit (a build for routers)".into())
        }
        AdminRequest::PeopleAdd { .. }
        | AdminRequest::PeopleList { .. }
        | AdminRequest::PeopleRemove { .. }
        | AdminRequest::PeopleToken { .. } => people(ctx, request).map_err(|e| e.to_string()),
        _ => accounts(ctx, request).map_err(|e| e.to_string()),
    }
}

/// Runs a `hearth people` command.
fn people(ctx: &Context<'_>, request: &AdminRequest) -> Result<String, crate::people::PeopleError> {
    use crate::people;
    let state = ctx.state;
    let shown = |made: &people::NewToken, what: &str| {
        format!(
            "{what} {}\npresence URL: http://<this box>:<control port>{}\n\
             (see docs/presence.md; send the token as Authorization: Bearer, or as OwnTracks' \
             password)\nThis is the only time the token is shown; store it now:\n{}",
            made.name,
            made.path(),
            made.token
        )
    };
    match request {
        AdminRequest::PeopleAdd { name, user, region } => {
            let made = people::add(state, user.trim(), name, region.as_deref())?;
            Ok(shown(&made, &format!("added to {}'s home:", user.trim())))
        }
        AdminRequest::PeopleToken { name } => match people::replace_token(state, name, false)? {
            Some(made) => Ok(shown(&made, "new presence token for")),
            None => Ok(String::new()),
        },
        AdminRequest::PeopleRemove { name } => {
            let p = people::remove(state, name)?;
            Ok(format!(
                "removed {} from {}'s home",
                people::person_name(name)?,
                p.user
            ))
        }
        AdminRequest::PeopleList { user } => Ok(state.accounts(|a| {
            let mut t = Table::new(&[
                "NAME", "USER", "REGION", "PRESENCE", "SINCE", "FROM", "TOKEN",
            ]);
            for (name, p) in a
                .people
                .iter()
                .filter(|(_, p)| user.as_deref().is_none_or(|u| u.trim() == p.user))
            {
                t.row(vec![
                    name.clone(),
                    p.user.clone(),
                    p.region.clone(),
                    match p.seen {
                        None => "never heard from".into(),
                        Some(s) if s.home => "home".into(),
                        Some(_) => "away".into(),
                    },
                    when(p.seen.map(|s| s.at_ms)),
                    p.seen.map_or(String::new(), |s| s.source.as_str().into()),
                    p.token
                        .as_ref()
                        .map_or("revoked".into(), |t| t.preview.clone()),
                ]);
            }
            t.render()
        })),
        // The others are `accounts`' and `run`'s.
        _ => Ok(String::new()),
    }
}

/// Runs an account command.
fn accounts(ctx: &Context<'_>, request: &AdminRequest) -> Result<String, AccountsError> {
    let state = ctx.state;
    match request {
        AdminRequest::UsersAdd { name } => Ok(if accounts::add_user(state, name)? {
            format!("added user {}", name.trim())
        } else {
            format!("user {} already exists", name.trim())
        }),
        AdminRequest::UsersList => Ok(users(ctx)),
        AdminRequest::UsersRemove { name } => {
            let r = accounts::users::remove_user(state, name)?;
            Ok(format!(
                "removed user {} ({} API key{} revoked, {} share{} ended)",
                r.name,
                r.keys,
                if r.keys == 1 { "" } else { "s" },
                r.shares,
                if r.shares == 1 { "" } else { "s" }
            ))
        }
        AdminRequest::KeysCreate {
            user,
            name,
            scopes,
            serials,
            expires_days,
        } => {
            let spec = KeySpec {
                user: user.clone(),
                name: name.clone(),
                scopes: keys::parse_scopes(scopes)?,
                serials: serials.clone(),
                expires_days: *expires_days,
            };
            let made = keys::create(state, &spec)?;
            let k = &made.record;
            Ok(format!(
                "created API key {} ({:?}) for {}\nscopes: {}\nserials: {}\nexpires: {}\n\
                 This is the only time the key is shown; store it now:\n{}",
                k.id,
                k.name,
                k.user,
                scope_list(&k.scopes),
                serial_list(&k.serials),
                k.expires_ms.map_or("never".into(), |t| when(Some(t))),
                made.key
            ))
        }
        AdminRequest::KeysList { user } => Ok(key_list(ctx, user.as_deref())),
        AdminRequest::KeysRevoke { id } => {
            let k = keys::revoke(state, id)?;
            Ok(format!(
                "revoked API key {} ({:?}) of {}",
                k.id, k.name, k.user
            ))
        }
        AdminRequest::Claim { code, user } => {
            let serial = accounts::claim(state, code, user)?;
            Ok(format!("Device {serial} linked to {}", user.trim()))
        }
        AdminRequest::Share {
            serial,
            with,
            access,
        } => {
            let serial = known_serial(serial)?;
            let access = ShareAccess::parse(access)
                .ok_or_else(|| AccountsError::InvalidAccess(access.clone()))?;
            accounts::share(state, &serial, with, access, ctx.open_mode)?;
            Ok(format!(
                "shared {serial} with {} ({})",
                with.trim(),
                access.as_str()
            ))
        }
        AdminRequest::Unshare { serial, with } => {
            let serial = known_serial(serial)?;
            accounts::unshare(state, &serial, with)?;
            Ok(format!("{serial} is no longer shared with {}", with.trim()))
        }
        AdminRequest::Devices => Ok(devices(ctx)),
        AdminRequest::ThermostatsAt { ips } => {
            let known = crate::onboarding::known_at(state, ips);
            Ok(serde_json::to_string(&known).unwrap_or_else(|_| "{}".into()))
        }
        // Answered by `run`: on the HomeKit identity rather than the accounts, and by `people`.
        AdminRequest::HomekitCode
        | AdminRequest::HomekitUnlock
        | AdminRequest::HomekitReset
        | AdminRequest::PeopleAdd { .. }
        | AdminRequest::PeopleList { .. }
        | AdminRequest::PeopleRemove { .. }
        | AdminRequest::PeopleToken { .. } => Ok(String::new()),
    }
}

fn known_serial(raw: &str) -> Result<String, AccountsError> {
    accounts::serial(raw.trim()).ok_or_else(|| AccountsError::InvalidSerial(raw.to_string()))
}

fn scope_list(scopes: &[crate::state::Scope]) -> String {
    scopes
        .iter()
        .map(|s| s.as_str())
        .collect::<Vec<_>>()
        .join(",")
}

fn serial_list(serials: &[String]) -> String {
    if serials.is_empty() {
        "all of the user's thermostats".into()
    } else {
        serials.join(",")
    }
}

fn users(ctx: &Context<'_>) -> String {
    ctx.state.accounts(|a| {
        let mut t = Table::new(&["USER", "CREATED", "OWNS", "SHARED WITH THEM", "KEYS"]);
        for (name, user) in &a.users {
            let owns = a.owners.values().filter(|o| &o.user == name).count();
            let shared = a.shares.values().filter(|m| m.contains_key(name)).count();
            let keys = a.api_keys.values().filter(|k| &k.user == name).count();
            t.row(vec![
                name.clone(),
                when((user.created_ms > 0).then_some(user.created_ms)),
                owns.to_string(),
                shared.to_string(),
                keys.to_string(),
            ]);
        }
        t.render()
    })
}

fn key_list(ctx: &Context<'_>, user: Option<&str>) -> String {
    ctx.state.accounts(|a| {
        let mut t = Table::new(&[
            "ID",
            "LABEL",
            "USER",
            "SCOPES",
            "SERIALS",
            "CREATED",
            "LAST USED",
            "EXPIRES",
            "KEY",
        ]);
        for k in a
            .api_keys
            .values()
            .filter(|k| user.is_none_or(|u| u.trim() == k.user))
        {
            t.row(vec![
                k.id.clone(),
                k.name.clone(),
                k.user.clone(),
                scope_list(&k.scopes),
                if k.serials.is_empty() {
                    "all".into()
                } else {
                    k.serials.join(",")
                },
                when(Some(k.created_ms)),
                when(k.last_used_ms),
                k.expires_ms.map_or("never".into(), |t| when(Some(t))),
                k.preview.clone(),
            ]);
        }
        t.render()
    })
}

fn devices(ctx: &Context<'_>) -> String {
    let mut t = Table::new(&["SERIAL", "ID", "NAME", "OWNER", "SHARES", "LAST SEEN"]);
    for serial in ctx.state.serials() {
        let Some(view) = thermostat::view(ctx.state, &serial) else {
            continue;
        };
        let (id, name) = (view.id.clone(), names::name(&view));
        let (owner, shares) = ctx.state.accounts(|a| {
            let owner = match (
                a.owner_of(&serial),
                effective_owner(a, &serial, ctx.open_mode),
            ) {
                (Some(o), _) => o.user.clone(),
                (None, Some(default)) => format!("{default} (unclaimed)"),
                (None, None) if a.is_released(&serial) => "- (released)".into(),
                (None, None) => "-".into(),
            };
            let shares = a.shares_of(&serial).map_or("-".into(), |m| {
                m.iter()
                    .map(|(u, s)| format!("{u}:{}", s.access.as_str()))
                    .collect::<Vec<_>>()
                    .join(",")
            });
            (owner, shares)
        });
        let seen = match ctx.last_seen {
            Some(f) => when(f(&serial)),
            None => "(server not running)".into(),
        };
        t.row(vec![
            serial.clone(),
            id.unwrap_or_else(|| "-".into()),
            name.unwrap_or_else(|| "-".into()),
            owner,
            shares,
            seen,
        ]);
    }
    t.render()
}

/// How long the CLI keeps trying when the store is locked but the server's socket does not
/// answer yet (a server that is starting up or stopping).
const LOCKED_RETRY: Duration = Duration::from_secs(10);

/// Who ran a command on the data directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    /// This process, on the store's files: no server was running on the directory. `created`:
    /// the directory did not exist before.
    Files { created: bool },
    /// The server running on the directory, through its admin socket.
    Server,
}

/// What a command gave and who ran it (`None`: nobody, e.g. no data directory to read).
pub struct Executed {
    pub outcome: Result<String, String>,
    pub via: Option<Via>,
}

/// Runs a command on the data directory: directly if no server holds it, else through the
/// running server. `Err` carries the text to print.
pub fn execute(data_dir: &Path, open_mode: bool, request: &AdminRequest) -> Result<String, String> {
    execute_via(data_dir, open_mode, request).outcome
}

/// The line that says where a command ran: the data directory's full path and whether a
/// running server took (or answered) it. Nothing when the command never ran.
pub fn note(data_dir: &Path, request: &AdminRequest, executed: &Executed) -> Option<String> {
    let dir = std::path::absolute(data_dir).unwrap_or_else(|_| data_dir.to_path_buf());
    let dir = dir.display();
    let ok = executed.outcome.is_ok();
    let reads = request.reads_only();
    Some(match executed.via? {
        Via::Server if reads => {
            format!("data directory {dir}: answered by the hearth server running on it")
        }
        Via::Server if ok => format!(
            "data directory {dir}: the hearth server running on it took the change; it applies at once"
        ),
        Via::Server => format!(
            "data directory {dir}: the hearth server running on it refused; nothing changed"
        ),
        Via::Files { .. } if reads => {
            format!("data directory {dir}: no hearth server is running on it (read from its files)")
        }
        Via::Files { created } if ok => format!(
            "data directory {dir}{}: no hearth server is running on it. The change is saved \
             there for a server started on it; a server running on another data directory does \
             not see it (pass that server's --data-dir; hearth demo prints its own)",
            if created { " (created now)" } else { "" }
        ),
        Via::Files { created } => format!(
            "data directory {dir}{}: no hearth server is running on it; nothing changed",
            if created { " (created now, empty)" } else { "" }
        ),
    })
}

/// [`execute`], saying who ran the command.
pub fn execute_via(data_dir: &Path, open_mode: bool, request: &AdminRequest) -> Executed {
    let existed = data_dir.is_dir();
    if request.reads_only() && !existed {
        return Executed {
            outcome: Err(format!("no data directory at {}", data_dir.display())),
            via: None,
        };
    }
    let done = |outcome: Result<String, String>, via: Via| Executed {
        outcome,
        via: Some(via),
    };
    let socket_path = data_dir.join(socket::SOCKET_FILE);
    // The command line, not a server: the system clock.
    let clock = Clock::system();
    let deadline = clock.now() + LOCKED_RETRY;
    loop {
        match State::open(data_dir, Arc::new(Hub::new())) {
            Ok((state, _)) => {
                // Opened (made, the first time) only for the HomeKit commands: the account
                // commands leave no HomeKit folder behind.
                #[cfg(feature = "homekit")]
                let identity = request
                    .is_homekit()
                    .then(|| crate::hap::Identity::open(&data_dir.join(crate::config::HOMEKIT_DIR)))
                    .transpose()
                    .map_err(|e| e.to_string());
                #[cfg(not(feature = "homekit"))]
                let identity: Result<Option<()>, String> = Ok(None);
                let result = identity.and_then(|_identity| {
                    let ctx = Context {
                        state: &state,
                        open_mode,
                        last_seen: None,
                        #[cfg(feature = "homekit")]
                        homekit: _identity.as_ref(),
                    };
                    run(&ctx, request)
                });
                let created = !existed;
                drop(state);
                if let Err(e) = files::give_to_dir_owner(data_dir) {
                    eprintln!(
                        "hearth: warning: could not hand new files in {} to its owner: {e}",
                        data_dir.display()
                    );
                }
                return done(result, Via::Files { created });
            }
            Err(StoreError::Locked { .. }) => match socket::send(&socket_path, request) {
                Ok(reply) if reply.ok => return done(Ok(reply.text), Via::Server),
                Ok(reply) => return done(Err(reply.text), Via::Server),
                Err(e) if clock.now() >= deadline => {
                    return Executed {
                        outcome: Err(format!(
                            "{} is in use by a running hearth, which did not answer on {}: {e}",
                            data_dir.display(),
                            socket_path.display()
                        )),
                        via: None,
                    };
                }
                Err(_) => std::thread::sleep(Duration::from_millis(100)),
            },
            Err(e) => {
                return Executed {
                    outcome: Err(e.to_string()),
                    via: None,
                };
            }
        }
    }
}
