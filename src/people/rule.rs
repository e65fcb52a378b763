//! The presence rule, pure: from what a home's people last reported, its vacation, the last
//! Home or Away a person made by hand and the time, whether the home should be away or home now,
//! why, and when to decide again. Nothing here reads the state or the clock; [`super::engine`]
//! gathers the facts and carries the decision out, and the page's "why" is read from the same
//! decision ([`super::status`]).
//!
//! The rule, in order:
//! 1. **A vacation under way** makes the home away, whoever comes and goes, until it ends; a
//!    Home or Away made by hand after it began holds.
//! 2. **With no people**, nothing is decided (a home without people behaves as it always did),
//!    but for a vacation that has just ended: the home comes back.
//! 3. Until someone has reported, nothing is decided.
//! 4. **A Home or Away made by hand** (the page, `/command`, `/api/v1`, MQTT, Apple Home) after
//!    the last presence change holds until the next one (a report that changes someone's
//!    presence, or a vacation beginning or ending).
//! 5. **Anyone home** (or never heard from: the safe side) makes the home home, at once.
//! 6. **Everyone away**: the home goes away once the last of them has been away for the wait
//!    (`AWAY_AFTER_MINUTES`).
//!
//! The decision is made again at any time from the facts alone, so a restart (everyone away
//! meanwhile, a wait that ended while hearth was down) comes out right on the first pass. The
//! engine carries it out when it differs from the last one it carried out, or a presence change
//! ([`Decision::last_change`]) came since: so the thermostat's own Eco button, which is not a
//! change by hand the rule can see, is left alone until the next presence change.

use crate::state::{Home, Seen, Why};

/// What the rule decides from.
#[derive(Clone, Copy, Debug)]
pub struct Facts<'a> {
    /// Each person's last report (`None`: never heard from).
    pub people: &'a [Option<Seen>],
    pub home: &'a Home,
    /// The latest Home or Away a person made by hand on any of the home's thermostats.
    pub manual_ms: Option<i64>,
    pub now_ms: i64,
    pub away_after_ms: i64,
}

/// What the rule decided.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    /// Away (`true`) or home, and why; `None` leaves the home as it is.
    pub want: Option<(bool, Why)>,
    /// When to decide again (a wait or a vacation ends, a vacation begins).
    pub wake_ms: Option<i64>,
    /// The vacation is over: it is to be cleared (and its end kept as a presence change).
    pub vacation_over: bool,
    /// A Home or Away made by hand holds.
    pub held: bool,
    /// Everyone is away and the wait runs: the home goes away then unless someone comes back.
    pub leaving_at: Option<i64>,
    /// The presence change the decision rests on (a report, a vacation's start or end).
    pub last_change: Option<i64>,
}

/// The rule (see the module comment).
pub fn decide(f: &Facts<'_>) -> Decision {
    let now = f.now_ms;
    let mut d = Decision::default();
    let wake = |at: i64, d: &mut Decision| {
        d.wake_ms = Some(d.wake_ms.map_or(at, |w: i64| w.min(at)));
    };
    // A change by hand in the same millisecond as a presence change is taken as the later.
    let after = |event: i64| f.manual_ms.is_some_and(|m| m >= event);
    let mut ended = f.home.vacation_ended_ms;
    if let Some(v) = &f.home.vacation {
        if now >= v.to_ms {
            d.vacation_over = true;
            ended = Some(ended.map_or(v.to_ms, |e| e.max(v.to_ms)));
        } else if now >= v.from_ms {
            wake(v.to_ms, &mut d);
            d.last_change = Some(v.from_ms);
            d.held = after(v.from_ms);
            if !d.held {
                d.want = Some((true, Why::Vacation));
            }
            return d;
        } else {
            wake(v.from_ms, &mut d);
        }
    }
    let last_report = f.people.iter().flatten().map(|s| s.at_ms).max();
    if f.people.is_empty() {
        if let Some(end) = ended.filter(|_| d.vacation_over) {
            d.last_change = Some(end);
            d.held = after(end);
            if !d.held {
                d.want = Some((false, Why::VacationEnded));
            }
        }
        return d;
    }
    // Until someone has reported, only a vacation ending now decides (an old vacation's end
    // does not make adding the first person a presence change).
    let last_change = match (last_report, ended) {
        (Some(r), e) => e.map_or(r, |e| e.max(r)),
        (None, Some(e)) if d.vacation_over => e,
        (None, _) => return d,
    };
    d.last_change = Some(last_change);
    d.held = after(last_change);
    let anyone_home = f.people.iter().any(|s| s.is_none_or(|s| s.home));
    if anyone_home {
        if !d.held {
            d.want = Some((false, Why::Arrived));
        }
        return d;
    }
    // Everyone has reported, and everyone is away: the wait counts from the last to leave.
    let due = last_report.unwrap_or(last_change) + f.away_after_ms;
    if now >= due {
        if !d.held {
            d.want = Some((true, Why::EveryoneLeft));
        }
    } else if !d.held {
        d.leaving_at = Some(due);
        wake(due, &mut d);
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::{PresenceSource, Vacation};

    const MIN: i64 = 60_000;
    const WAIT: i64 = 10 * MIN;
    const T: i64 = 1_796_212_800_000;

    fn seen(home: bool, at_ms: i64) -> Option<Seen> {
        Some(Seen {
            home,
            at_ms,
            source: PresenceSource::Url,
        })
    }

    fn decide_at(people: &[Option<Seen>], home: &Home, manual: Option<i64>, now: i64) -> Decision {
        decide(&Facts {
            people,
            home,
            manual_ms: manual,
            now_ms: now,
            away_after_ms: WAIT,
        })
    }

    fn vacation(from_ms: i64, to_ms: i64) -> Home {
        Home {
            vacation: Some(Vacation {
                from: String::new(),
                to: String::new(),
                from_ms,
                to_ms,
            }),
            ..Home::default()
        }
    }

    #[test]
    fn no_people_decides_nothing() {
        let d = decide_at(&[], &Home::default(), None, T);
        assert_eq!(d, Decision::default());
        // Nobody has reported yet: nothing either.
        let d = decide_at(&[None, None], &Home::default(), None, T);
        assert_eq!(d.want, None);
    }

    #[test]
    fn one_leaves_nothing_the_last_leaves_away_after_the_wait_one_back_home() {
        let home = Home::default();
        // Alice left; Bob never heard from: counts as home.
        let d = decide_at(&[seen(false, T), None], &home, None, T + MIN);
        assert_eq!(d.want, Some((false, Why::Arrived)));
        // Alice left, Bob home.
        let people = [seen(false, T), seen(true, T - MIN)];
        assert_eq!(
            decide_at(&people, &home, None, T).want,
            Some((false, Why::Arrived))
        );
        // Bob leaves 30 minutes later: the wait counts from him.
        let people = [seen(false, T), seen(false, T + 30 * MIN)];
        let d = decide_at(&people, &home, None, T + 39 * MIN);
        assert_eq!(d.want, None);
        assert_eq!(d.leaving_at, Some(T + 40 * MIN));
        assert_eq!(d.wake_ms, Some(T + 40 * MIN));
        let d = decide_at(&people, &home, None, T + 40 * MIN);
        assert_eq!(d.want, Some((true, Why::EveryoneLeft)));
        assert_eq!(d.leaving_at, None);
        // Alice comes back: home at once.
        let people = [seen(true, T + 50 * MIN), seen(false, T + 30 * MIN)];
        assert_eq!(
            decide_at(&people, &home, None, T + 50 * MIN).want,
            Some((false, Why::Arrived))
        );
    }

    #[test]
    fn a_change_by_hand_holds_until_the_next_presence_change() {
        let home = Home::default();
        let people = [seen(false, T), seen(false, T + MIN)];
        // Home by hand after the rule made it away: held, however long.
        let d = decide_at(&people, &home, Some(T + 20 * MIN), T + 300 * MIN);
        assert!(d.held);
        assert_eq!(d.want, None);
        // By hand during the wait: the wait does not end it.
        let d = decide_at(&people, &home, Some(T + 5 * MIN), T + 11 * MIN);
        assert_eq!((d.held, d.want, d.leaving_at), (true, None, None));
        // The next arrival ends the hold.
        let people = [seen(true, T + 400 * MIN), seen(false, T + MIN)];
        let d = decide_at(&people, &home, Some(T + 20 * MIN), T + 400 * MIN);
        assert_eq!(d.want, Some((false, Why::Arrived)));
        // Away by hand while someone is home holds too.
        let d = decide_at(&people, &home, Some(T + 401 * MIN), T + 402 * MIN);
        assert_eq!((d.held, d.want), (true, None));
        // A change by hand before the last presence change does not hold.
        let d = decide_at(&people, &home, Some(T), T + 402 * MIN);
        assert!(!d.held);
    }

    #[test]
    fn a_vacation_is_not_ended_by_arrivals_and_ends_by_itself() {
        let day = 24 * 60 * MIN;
        let home = vacation(T + day, T + 4 * day);
        let people = [seen(true, T)];
        // Before it: presence rules, and the rule wakes when it begins.
        let d = decide_at(&people, &home, None, T + MIN);
        assert_eq!(d.want, Some((false, Why::Arrived)));
        assert_eq!(d.wake_ms, Some(T + day));
        // During it: away, and an arrival does not end it.
        let people = [seen(true, T + 2 * day)];
        let d = decide_at(&people, &home, None, T + 2 * day);
        assert_eq!(d.want, Some((true, Why::Vacation)));
        assert_eq!(d.wake_ms, Some(T + 4 * day));
        // Home by hand during it holds.
        let d = decide_at(&people, &home, Some(T + 2 * day), T + 3 * day);
        assert_eq!((d.held, d.want), (true, None));
        // After it: cleared, and presence rules again.
        let d = decide_at(&people, &home, Some(T + 2 * day), T + 4 * day);
        assert!(d.vacation_over);
        assert_eq!(d.want, Some((false, Why::Arrived)));
        // Everyone away when it ends: away at once (they left long ago).
        let gone = [seen(false, T + 2 * day)];
        let d = decide_at(&gone, &home, None, T + 4 * day);
        assert_eq!(d.want, Some((true, Why::EveryoneLeft)));
        // Nobody has reported: it ends in Home (never heard from counts as home), and an old
        // vacation's end decides nothing afterwards.
        let ended = Home {
            vacation_ended_ms: Some(T + 4 * day),
            ..Home::default()
        };
        assert_eq!(
            decide_at(&[None], &home, None, T + 4 * day).want,
            Some((false, Why::Arrived))
        );
        assert_eq!(decide_at(&[None], &ended, None, T + 5 * day).want, None);
        // With no people, it ends in Home.
        let d = decide_at(&[], &home, None, T + 4 * day);
        assert_eq!(d.want, Some((false, Why::VacationEnded)));
        let d = decide_at(&[], &home, None, T + 2 * day);
        assert_eq!(d.want, Some((true, Why::Vacation)));
    }
}
