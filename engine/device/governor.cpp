// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/device/governor.h"

#include <algorithm>
#include <utility>

#include "engine/common/error.h"
#include "engine/common/format.h"
#include "engine/common/log.h"
#include "engine/device/process_usage.h"

namespace rookery::device {
namespace {

using namespace std::chrono;

// CPU credit a quiet process may bank, per allowed core: enough to start the next
// microbatch at once after a pause, too little to blur the cap over a few seconds.
constexpr double kBurstNsPerCore = 50e6;
// Blocked threads look again at least this often even if nothing woke them.
constexpr nanoseconds kMinWait = 1ms;

std::string idleSourceNote(const GovernorEnvironment &env)
{
    return env.idle ? "idle source: " + env.idle->name()
                    : "no idle source (no logind IdleHint over D-Bus, no X screensaver): the user counts as active";
}

} // namespace

GovernorEnvironment systemEnvironment()
{
    GovernorEnvironment e;
    e.clock = systemClock();
    e.idle = makeSystemIdleSource();
    e.power = std::make_shared<SysfsPowerSource>();
    e.residentBytes = [] { return device::residentBytes(); };
    e.cpuTime = [] { return processCpuTime(); };
    e.cores = allowedCores();
    return e;
}

std::string_view stateName(GovernorState state)
{
    switch (state) {
    case GovernorState::Running:
        return "running";
    case GovernorState::Throttled:
        return "throttled";
    case GovernorState::Paused:
        return "paused";
    case GovernorState::Stopped:
        return "stopped";
    }
    return "?";
}

Governor::Governor(GovernorSettings settings, GovernorEnvironment environment)
    : m_env(std::move(environment))
{
    validate(settings);
    if (!m_env.clock)
        m_env.clock = systemClock();
    if (m_env.cores <= 0)
        m_env.cores = allowedCores();
    m_env.pollInterval = std::max(m_env.pollInterval, milliseconds(1));
    m_settings = std::move(settings);
    m_schedule = Schedule::parse(m_settings.schedule);
    const bool idleMatters = m_settings.runOnlyWhenIdle || !(m_settings.whenActive == m_settings.whenIdle);
    log::write(idleMatters ? log::Level::Info : log::Level::Debug, "governor", idleSourceNote(m_env));
    if (m_settings.memoryCapMiB > 0 && !m_env.residentBytes)
        log::warning("governor", "cannot read resident memory here; the memory cap is not enforced");

    std::unique_lock lock(m_mutex);
    m_ledgerAt = m_env.clock->steadyNow();
    if (m_env.cpuTime)
        m_lastCpu = m_env.cpuTime();
    evaluateLocked(m_ledgerAt);
    m_statusChanged = false; // the first status is no change
}

Governor::~Governor()
{
    // No observer call from here: whoever set it may already be half destroyed.
    std::lock_guard lock(m_mutex);
    closeLocked("stopped: shutting down");
}

bool Governor::enter()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        const uint64_t generation = m_wakeGeneration;
        const Admission a = admitLocked();
        publish(lock);
        if (a.closed)
            return false;
        if (a.wait == nanoseconds(0))
            return true;
        // The generation catches a wake-up that came while publish() had the lock open.
        m_wake.wait_for(lock, std::clamp<nanoseconds>(a.wait, kMinWait, m_env.pollInterval),
                        [&] { return m_wakeGeneration != generation; });
    }
}

Governor::Admission Governor::tryEnter()
{
    std::unique_lock lock(m_mutex);
    const Admission a = admitLocked();
    publish(lock);
    return a;
}

Governor::Admission Governor::admitLocked()
{
    const SteadyTime now = m_env.clock->steadyNow();
    if (!m_closed)
        memoryCrossedLocked();
    evaluateLocked(now);
    Admission a;
    if (m_closed) {
        a.closed = true;
    } else if (m_status.state == GovernorState::Paused) {
        // Come back when a timed hold may end, or at the next look at the sources.
        nanoseconds wait = m_env.pollInterval;
        if (m_snoozeUntil)
            wait = std::min<nanoseconds>(wait, *m_snoozeUntil - now);
        if (m_acSince)
            wait = std::min<nanoseconds>(wait, *m_acSince + seconds(m_settings.batteryResumeSeconds) - now);
        a.wait = std::max(wait, kMinWait);
    } else {
        chargeLedgerLocked(now);
        const double rate = m_status.limits.cpuPercent / 100.0 * m_status.limits.cores; // credit ns per ns
        m_resting = m_resting || m_ledgerNs < 0;
        const double need = m_resting ? resumeLevelLocked() : 0.0;
        if (m_ledgerNs < need) {
            a.wait = std::max(nanoseconds(int64_t((need - m_ledgerNs) / rate)), nanoseconds(1));
        } else {
            m_resting = false;
            ++m_status.inFlight;
        }
    }
    return a;
}

void Governor::leave(nanoseconds busy)
{
    std::lock_guard lock(m_mutex);
    m_unchargedBusy += std::max(busy, nanoseconds(0));
    m_status.inFlight = std::max(0, m_status.inFlight - 1);
}

void Governor::setSettings(const GovernorSettings &settings)
{
    validate(settings); // throws before anything changes
    Schedule schedule = Schedule::parse(settings.schedule);
    std::unique_lock lock(m_mutex);
    if (settings.runOnlyWhenIdle && !m_settings.runOnlyWhenIdle && !m_env.idle)
        log::warning("governor", "run only when idle: " + idleSourceNote(m_env) + ", so work will not run");
    m_settings = settings;
    m_schedule = std::move(schedule);
    evaluateLocked(m_env.clock->steadyNow());
    wakeAllLocked();
    publish(lock);
}

GovernorSettings Governor::settings() const
{
    std::lock_guard lock(m_mutex);
    return m_settings;
}

void Governor::pause()
{
    std::unique_lock lock(m_mutex);
    m_paused = true;
    evaluateLocked(m_env.clock->steadyNow());
    publish(lock);
}

void Governor::resume()
{
    std::unique_lock lock(m_mutex);
    m_paused = false;
    m_snoozeUntil.reset();
    evaluateLocked(m_env.clock->steadyNow());
    wakeAllLocked();
    publish(lock);
}

void Governor::snooze(minutes duration)
{
    std::unique_lock lock(m_mutex);
    m_snoozeUntil = m_env.clock->steadyNow() + duration;
    m_snoozeUntilWall = time_point_cast<system_clock::duration>(m_env.clock->wallNow() + duration);
    evaluateLocked(m_env.clock->steadyNow());
    publish(lock);
}

void Governor::close(const std::string &reason)
{
    std::unique_lock lock(m_mutex);
    if (!m_closed)
        closeLocked(reason);
    evaluateLocked(m_env.clock->steadyNow());
    publish(lock);
}

GovernorStatus Governor::status()
{
    std::unique_lock lock(m_mutex);
    evaluateLocked(m_env.clock->steadyNow());
    GovernorStatus s = m_status;
    publish(lock);
    return s;
}

void Governor::setObserver(Observer observer)
{
    std::lock_guard lock(m_mutex);
    m_observer = observer ? std::make_shared<Observer>(std::move(observer)) : nullptr;
}

int Governor::cores() { return status().limits.cores; }

double Governor::cpuShare()
{
    std::lock_guard lock(m_mutex);
    return std::clamp(m_status.limits.cpuPercent, 1, 100) / 100.0;
}

ThreadConfig Governor::threadConfig() { return defaultThreadConfig(cores()); }

void Governor::checkFits(uint64_t bytes, const std::string &what)
{
    std::lock_guard lock(m_mutex);
    const uint64_t cap = uint64_t(m_settings.memoryCapMiB) << 20;
    if (cap == 0 || !m_env.residentBytes)
        return;
    const uint64_t resident = m_env.residentBytes();
    if (resident + bytes > cap)
        throw Error("the memory cap of " + format::bytes(double(cap)) + " leaves no room for " + what +
                    ": it needs about " + format::bytes(double(bytes)) + " on top of the " +
                    format::bytes(double(resident)) + " this process holds already; raise the memory cap");
}

void Governor::evaluateLocked(SteadyTime now)
{
    if (now >= m_nextPoll)
        pollSourcesLocked(now);

    // Battery: hold at once when on battery; resume only after AC has been back for
    // batteryResumeSeconds without a break, so a loose plug does not start and stop work.
    if (!m_settings.pauseOnBattery) {
        m_batteryHold = false;
        m_acSince.reset();
    } else if (m_power.onBattery) {
        m_batteryHold = true;
        m_acSince.reset();
    } else if (m_batteryHold) {
        if (!m_acSince)
            m_acSince = now;
        if (now - *m_acSince >= seconds(m_settings.batteryResumeSeconds)) {
            m_batteryHold = false;
            m_acSince.reset();
        }
    }
    if (m_snoozeUntil && now >= *m_snoozeUntil)
        m_snoozeUntil.reset();

    const bool userIdle = m_idleTime && *m_idleTime >= minutes(m_settings.idleMinutes);
    const Limits &l = userIdle ? m_settings.whenIdle : m_settings.whenActive;
    EffectiveLimits limits;
    limits.cores = l.maxCores > 0 ? int(std::min<int64_t>(l.maxCores, m_env.cores)) : m_env.cores;
    limits.cpuPercent = int(l.cpuPercent);
    limits.uploadBytesPerSecond = l.uploadKiBps * 1024;
    limits.downloadBytesPerSecond = l.downloadKiBps * 1024;
    applyLimitsLocked(limits);

    GovernorStatus s = m_status;
    s.userIdle = userIdle;
    s.idleSource = m_env.idle ? m_env.idle->name() : std::string();
    s.onBattery = m_power.onBattery;
    s.batteryPercent = m_power.batteryPercent;
    s.pausedByUser = m_paused;
    s.snoozedUntilMs =
        m_snoozeUntil ? duration_cast<milliseconds>(m_snoozeUntilWall.time_since_epoch()).count() : int64_t(0);
    auto [hold, holdText] = m_closed ? std::pair<HoldReason, std::string>() : holdReasonLocked();
    s.hold = hold;
    if (m_closed) {
        s.state = GovernorState::Stopped;
        s.reason = m_closedReason;
    } else if (hold != HoldReason::None) {
        m_heldSinceCharge = true;
        s.state = GovernorState::Paused;
        s.reason = std::move(holdText);
    } else {
        std::string parts;
        const auto add = [&parts](const std::string &part) { parts += (parts.empty() ? "" : ", ") + part; };
        if (limits.cores < m_env.cores)
            add(std::to_string(limits.cores) + " of " + std::to_string(m_env.cores) + " cores");
        if (limits.cpuPercent < 100)
            add(std::to_string(limits.cpuPercent) + "% CPU");
        if (limits.uploadBytesPerSecond > 0)
            add("upload " + format::bytes(double(limits.uploadBytesPerSecond)) + "/s");
        if (limits.downloadBytesPerSecond > 0)
            add("download " + format::bytes(double(limits.downloadBytesPerSecond)) + "/s");
        const std::string who = userIdle ? "user idle" : m_env.idle ? "user active" : "user counts as active";
        s.state = parts.empty() ? GovernorState::Running : GovernorState::Throttled;
        s.reason = parts.empty() ? "running: " + who + ", no limits" : "throttled: " + who + " (" + parts + ")";
    }
    if (s.state != m_status.state || s.reason != m_status.reason)
        m_statusChanged = true;
    m_status = std::move(s);
}

void Governor::pollSourcesLocked(SteadyTime now)
{
    m_idleTime = m_env.idle ? m_env.idle->idleTime() : std::nullopt;
    m_power = m_env.power ? m_env.power->read() : PowerState{};
    m_nextPoll = now + m_env.pollInterval;
}

// The first rule that holds work, in order of precedence, and its words; None when
// none does.
std::pair<HoldReason, std::string> Governor::holdReasonLocked()
{
    if (m_paused)
        return {HoldReason::PausedByUser, "paused: by the user"};
    if (m_snoozeUntil)
        return {HoldReason::Snoozed, "paused: snoozed until " + m_env.clock->timeOfDay(m_snoozeUntilWall)};
    if (m_batteryHold) {
        if (m_power.onBattery)
            return {HoldReason::OnBattery,
                    "paused: on battery" + (m_power.batteryPercent
                                                ? " (" + std::to_string(*m_power.batteryPercent) + "%)"
                                                : std::string())};
        return {HoldReason::OnBattery, "paused: on AC power again, resuming after " +
                                           std::to_string(m_settings.batteryResumeSeconds) + " s without a break"};
    }
    const WeekTime week = m_env.clock->weekTimeOf(m_env.clock->wallNow());
    if (!m_schedule.allows(week)) {
        const auto next = m_schedule.nextChange(week);
        return {HoldReason::OutsideSchedule,
                "paused: outside the schedule" + (next ? " (next window " + next->describe() + ")" : std::string())};
    }
    const bool userIdle = m_idleTime && *m_idleTime >= minutes(m_settings.idleMinutes);
    if (m_settings.runOnlyWhenIdle && !userIdle)
        return {HoldReason::WaitingForIdle, m_env.idle
                                                ? "paused: user active (run only when idle)"
                                                : "paused: user counts as active, no idle source (run only when idle)"};
    return {};
}

void Governor::applyLimitsLocked(const EffectiveLimits &limits)
{
    if (limits.uploadBytesPerSecond != m_status.limits.uploadBytesPerSecond)
        m_upload.setRate(uint64_t(limits.uploadBytesPerSecond));
    if (limits.downloadBytesPerSecond != m_status.limits.downloadBytesPerSecond)
        m_download.setRate(uint64_t(limits.downloadBytesPerSecond));
    m_status.limits = limits;
}

void Governor::chargeLedgerLocked(SteadyTime now)
{
    const double cores = m_status.limits.cores;
    const double cap = m_status.limits.cpuPercent / 100.0;
    double consumed = double(m_unchargedBusy.count()) * cores;
    if (m_env.cpuTime) {
        const nanoseconds cpu = m_env.cpuTime();
        consumed = double((cpu - m_lastCpu).count());
        m_lastCpu = cpu;
    }
    m_unchargedBusy = nanoseconds(0);
    const double elapsed = double(duration_cast<nanoseconds>(now - m_ledgerAt).count());
    m_ledgerAt = now;
    // A pause is rest enough: CPU used meanwhile (evaluation, the UI) is not owed, and
    // the quiet time is not banked either.
    if (cap >= 1.0 || std::exchange(m_heldSinceCharge, false)) {
        m_ledgerNs = 0;
        m_resting = false;
        m_freshLedger = true;
        return;
    }
    // Start (after construction, a pause or uncapped work) as if a rest had just ended,
    // so the first cycle is a whole one rather than a short run and a long rest.
    if (std::exchange(m_freshLedger, false))
        m_ledgerNs = resumeLevelLocked();
    const double bank = std::max(kBurstNsPerCore * cores, resumeLevelLocked());
    m_ledgerNs = std::min(bank, m_ledgerNs + cap * cores * elapsed - consumed);
}

// The credit a rest must earn before work resumes: the CPU time of one period's run at
// full use, cap x cores x (1 - cap) x period, so that run and rest take cap and 1 - cap
// of the period.
double Governor::resumeLevelLocked() const
{
    const double cap = m_status.limits.cpuPercent / 100.0;
    return cap * (1 - cap) * m_status.limits.cores * double(nanoseconds(m_env.dutyPeriod).count());
}

bool Governor::memoryCrossedLocked()
{
    const uint64_t cap = uint64_t(m_settings.memoryCapMiB) << 20;
    if (cap == 0 || !m_env.residentBytes)
        return false;
    const uint64_t resident = m_env.residentBytes();
    if (resident <= cap)
        return false;
    closeLocked("stopped: resident memory " + format::bytes(double(resident)) + " crossed the cap of " +
                format::bytes(double(cap)));
    return true;
}

void Governor::closeLocked(const std::string &reason)
{
    m_closed = true;
    m_closedReason = reason;
    wakeAllLocked();
}

void Governor::wakeAllLocked()
{
    ++m_wakeGeneration;
    m_wake.notify_all();
}

void Governor::publish(std::unique_lock<std::mutex> &lock)
{
    if (!m_statusChanged)
        return;
    m_statusChanged = false;
    const GovernorStatus s = m_status;
    const auto observer = m_observer;
    lock.unlock();
    log::debug("governor", s.reason);
    if (observer)
        (*observer)(s);
    lock.lock();
}

} // namespace rookery::device
