//! The `people` thread: carries out the presence rule ([`super::rule::decide`]) for every home
//! that has people or a vacation. It decides again when a report changes someone's presence, a
//! vacation is set (the surfaces nudge it through [`People`]), the wait or a vacation ends, the
//! test clock moves, and once an hour whatever happens. A decision is applied to the home's
//! thermostats whose away differs from it, each as the core's `Away` intent with origin
//! [`Origin::Presence`], so every surface, the energy history and the event stream see it as they
//! see a person's change.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::{self, JoinHandle};
use std::time::Duration;

use crossbeam_channel::{Receiver, Sender, select};
use parking_lot::{Condvar, Mutex};

use super::rule::{self, Decision, Facts};
use super::{PeopleError, Reported};
use crate::accounts::{Viewer, Visibility, effective_owner};
use crate::config::Config;
use crate::hub::Origin;
use crate::state::{Applied, ChangeKind, Home, Op, PresenceSource, Seen, State, Vacation};
use crate::thermostat::{self, Intent, Reading};
use crate::util::shutdown::Shutdown;

/// What the presence rule needs of the server (the server's `App`; here, since the server's
/// shared parts know none of the rest).
pub trait Context: Send + Sync {
    fn config(&self) -> &Config;
    fn state(&self) -> &State;
    fn people(&self) -> &People;
    /// A thermostat's reading now (whether it is away).
    fn reading(&self, serial: &str) -> Option<Arc<Reading>>;
    fn visibility(&self) -> Visibility;
}

/// The longest the thread sleeps with nothing due (a safety net; every change nudges it).
const IDLE: Duration = Duration::from_secs(3600);

/// What the surfaces hold of the presence rule: its wait, and the nudge that makes the thread
/// decide again at once.
pub struct People {
    away_after: Duration,
    nudge: Sender<()>,
    nudged: Receiver<()>,
    /// Passes begun, and the number of the last one finished (each pass's number is the count
    /// of passes begun when it began).
    begun: AtomicU64,
    finished: AtomicU64,
    passed: (Mutex<()>, Condvar),
}

impl People {
    pub fn new(away_after: Duration) -> People {
        let (nudge, nudged) = crossbeam_channel::bounded(1);
        People {
            away_after,
            nudge,
            nudged,
            begun: AtomicU64::new(0),
            finished: AtomicU64::new(0),
            passed: (Mutex::new(()), Condvar::new()),
        }
    }

    /// `AWAY_AFTER_MINUTES`.
    pub fn away_after(&self) -> Duration {
        self.away_after
    }

    /// Makes the thread decide again now (one nudge covers any number sent before it wakes).
    pub fn nudge(&self) {
        let _ = self.nudge.try_send(());
    }

    /// [`super::report`], and a nudge when it changed someone's presence.
    pub fn report(
        &self,
        state: &State,
        name: &str,
        home: bool,
        source: PresenceSource,
        at_ms: Option<i64>,
    ) -> Result<Reported, PeopleError> {
        let reported = super::report(state, name, home, source, at_ms)?;
        if reported == Reported::Changed {
            self.nudge();
        }
        Ok(reported)
    }

    /// [`super::set_vacation`], and a nudge.
    pub fn set_vacation(
        &self,
        state: &State,
        user: &str,
        vacation: Option<Vacation>,
    ) -> Result<(), PeopleError> {
        super::set_vacation(state, user, vacation)?;
        self.nudge();
        Ok(())
    }

    /// A mark to wait from: the passes begun so far.
    pub fn mark(&self) -> u64 {
        self.begun.load(Ordering::Acquire)
    }

    /// Waits, at most `timeout`, until a pass begun after `mark` was taken has finished;
    /// whether one had. For tests: with a nudge or a clock move after the mark, it shows the
    /// rule looked at what they did, and so that it did nothing when nothing changed.
    pub fn wait_pass(&self, mark: u64, timeout: Duration) -> bool {
        let (lock, cond) = &self.passed;
        let mut guard = lock.lock();
        let deadline = std::time::Instant::now() + timeout;
        while self.finished.load(Ordering::Acquire) <= mark {
            if cond.wait_until(&mut guard, deadline).timed_out() {
                return self.finished.load(Ordering::Acquire) > mark;
            }
        }
        true
    }

    fn begin(&self) -> u64 {
        self.begun.fetch_add(1, Ordering::AcqRel) + 1
    }

    fn finish(&self, pass: u64) {
        let (lock, cond) = &self.passed;
        let _guard = lock.lock();
        self.finished.store(pass, Ordering::Release);
        cond.notify_all();
    }
}

/// Starts the `people` thread.
pub fn start(app: &Arc<dyn Context>, shutdown: &Shutdown) -> std::io::Result<JoinHandle<()>> {
    let app = Arc::clone(app);
    let stopped = shutdown.receiver();
    thread::Builder::new()
        .name("people".into())
        .stack_size(256 * 1024)
        .spawn(move || run(app.as_ref(), &stopped))
}

fn run(app: &dyn Context, stopped: &Receiver<()>) {
    let clock = app.config().clock.clone();
    let moved = clock.moves();
    let nudged = app.people().nudged.clone();
    loop {
        let number = app.people().begin();
        let wake = pass(app);
        app.people().finish(number);
        let due = wake
            .unwrap_or(i64::MAX)
            .min(clock.now_ms().saturating_add(IDLE.as_millis() as i64));
        select! {
            recv(stopped) -> _ => break,
            recv(nudged) -> _ => {}
            recv(moved) -> _ => {}
            default(clock.wait_time_ms(due)) => {}
        }
    }
}

/// The facts of one home, as they are now.
pub(super) struct HomeNow {
    pub people: Vec<Option<Seen>>,
    pub home: Home,
    /// The home's thermostats: those its user owns (in open mode, the unclaimed ones are the
    /// default user's).
    pub thermostats: Vec<String>,
    pub manual_ms: Option<i64>,
    /// When these facts were read.
    pub now_ms: i64,
    pub away_after_ms: i64,
}

impl HomeNow {
    pub fn of(app: &dyn Context, user: &str) -> HomeNow {
        let now_ms = app.config().clock.now_ms();
        let state = app.state();
        let serials = state.serials();
        let open_mode = !app.config().require_device_pairing;
        let (people, home, thermostats) = state.accounts(|a| {
            let people = super::people_of(a, user).map(|(_, p)| p.seen).collect();
            let thermostats = serials
                .into_iter()
                .filter(|s| effective_owner(a, s, open_mode) == Some(user))
                .collect::<Vec<_>>();
            (people, super::home_of(a, user), thermostats)
        });
        // The latest Home or Away a person made on any of them (the rule's own are not).
        let manual_ms = thermostats
            .iter()
            .filter_map(|s| {
                state
                    .read_device(s, |d| {
                        // A snapshot written before `last_away` existed has it in `last_change`.
                        let away = d.last_away.as_ref().or(d
                            .last_change
                            .as_ref()
                            .filter(|c| c.kind == ChangeKind::Away));
                        away.filter(|c| c.origin != Origin::Presence)
                            .map(|c| c.sent_ms)
                    })
                    .flatten()
            })
            .max();
        HomeNow {
            people,
            home,
            thermostats,
            manual_ms,
            now_ms,
            away_after_ms: i64::try_from(app.people().away_after().as_millis()).unwrap_or(i64::MAX),
        }
    }

    pub fn decide(&self) -> Decision {
        rule::decide(&Facts {
            people: &self.people,
            home: &self.home,
            manual_ms: self.manual_ms,
            now_ms: self.now_ms,
            away_after_ms: self.away_after_ms,
        })
    }
}

/// How soon a pass that could not carry a decision out tries again.
const RETRY: Duration = Duration::from_secs(60);

/// Decides for every home with people or a vacation and carries the decisions out; when to
/// decide again.
fn pass(app: &dyn Context) -> Option<i64> {
    let users: std::collections::BTreeSet<String> = app.state().accounts(|a| {
        a.people
            .values()
            .map(|p| p.user.clone())
            .chain(a.homes.keys().cloned())
            .collect()
    });
    let mut wake: Option<i64> = None;
    let mut soon = |at: i64| wake = Some(wake.map_or(at, |w: i64| w.min(at)));
    for user in users {
        let now = HomeNow::of(app, &user);
        let decision = now.decide();
        if let Err(e) = carry_out(app, &user, &now, &decision) {
            log::warn!("presence: could not carry out the rule for {user}'s home: {e}");
            soon(now.now_ms.saturating_add(RETRY.as_millis() as i64));
        }
        if let Some(at) = decision.wake_ms {
            soon(at);
        }
    }
    wake
}

/// Carries `d` out for `user`'s home: the `Away` intent to each thermostat that differs, when
/// the decision differs from the last one carried out or a presence change came since (see
/// `rule`); then the home's record, only once every thermostat took it (else the next pass,
/// soon, tries again).
fn carry_out(
    app: &dyn Context,
    user: &str,
    now: &HomeNow,
    d: &Decision,
) -> Result<(), PeopleError> {
    let state = app.state();
    let due = |away: bool, why| match now.home.applied {
        None => true,
        Some(a) => (a.away, a.why) != (away, why) || d.last_change.is_some_and(|c| c > a.at_ms),
    };
    let mut applied = now.home.applied;
    if let Some((away, why)) = d.want.filter(|(away, why)| due(*away, *why)) {
        for serial in &now.thermostats {
            if app.reading(serial).is_none_or(|r| r.away == away) {
                continue;
            }
            thermostat::commit_from(
                state,
                serial,
                &Intent::Away(away),
                app.visibility(),
                Viewer::Presence,
                Origin::Presence,
            )
            .map_err(|e| PeopleError::Thermostat(serial.clone(), e.to_string()))?;
            log::info!(
                "presence: {serial} is now {} ({})",
                if away { "away" } else { "home" },
                why.as_str()
            );
        }
        // Stamped with the time the facts were read: a report that came during the pass is
        // a presence change after it.
        applied = Some(Applied {
            away,
            at_ms: now.now_ms,
            why,
        });
    }
    let ended = d
        .vacation_over
        .then_some(())
        .and(now.home.vacation.as_ref());
    if applied == now.home.applied && ended.is_none() {
        return Ok(());
    }
    state.update_accounts(|txn| {
        if !txn.accounts().users.contains_key(user) {
            return Ok(());
        }
        // What this pass owns, over the home as it is now (a vacation set or cancelled
        // meanwhile is kept).
        let mut next = super::home_of(txn.accounts(), user);
        next.applied = applied;
        if let Some(v) = ended.filter(|v| next.vacation.as_ref() == Some(*v)) {
            next.vacation = None;
            next.vacation_ended_ms =
                Some(next.vacation_ended_ms.map_or(v.to_ms, |e| e.max(v.to_ms)));
        }
        txn.push(Op::PutHome {
            user: user.to_string(),
            home: next,
        });
        Ok::<_, PeopleError>(())
    })
}

/// A home as the page shows it: whether it is away, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HomeStatus {
    /// Every one of the home's thermostats is away (and it has one).
    pub away: bool,
    /// `everyone_left`, `arrived`, `vacation`, `vacation_ended`, or `manual` (a Home or Away
    /// made by hand holds); `None` when the rule has not made it what it is.
    pub why: Option<&'static str>,
    /// Since when it has been so, for that reason.
    pub since_ms: Option<i64>,
    /// When a vacation under way ends.
    pub until_ms: Option<i64>,
    /// Everyone is away and the wait runs: when the home goes away unless someone comes back.
    pub leaving_at_ms: Option<i64>,
    pub vacation: Option<Vacation>,
}

/// `user`'s home now, from the same decision the thread makes.
pub fn status(app: &dyn Context, user: &str) -> HomeStatus {
    let now = HomeNow::of(app, user);
    let d = now.decide();
    let aways: Vec<bool> = now
        .thermostats
        .iter()
        .filter_map(|s| app.reading(s).map(|r| r.away))
        .collect();
    let away = !aways.is_empty() && aways.iter().all(|a| *a);
    let vacation = now.home.vacation.clone().filter(|_| !d.vacation_over);
    let under_way = vacation.as_ref().filter(|v| v.from_ms <= now.now_ms);
    let (why, since_ms) = if d.held {
        (Some("manual"), now.manual_ms)
    } else {
        match now.home.applied {
            Some(a) if a.away == away => (Some(a.why.as_str()), Some(a.at_ms)),
            _ => (None, None),
        }
    };
    HomeStatus {
        away,
        why,
        since_ms,
        until_ms: under_way.map(|v| v.to_ms),
        leaving_at_ms: d.leaving_at,
        vacation,
    }
}
