// SPDX-License-Identifier: GPL-3.0-or-later
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>

#include "engine/common/token_bucket.h"
#include "engine/device/clock.h"
#include "engine/device/governor_settings.h"
#include "engine/device/idle_source.h"
#include "engine/device/power_source.h"
#include "engine/device/schedule.h"
#include "engine/device/thread_config.h"
#include "engine/device/work_gate.h"

namespace rookery::device {

/// What the governor reads the world through. Every part is a seam for tests.
struct GovernorEnvironment
{
    std::shared_ptr<const Clock> clock;                ///< null: the system clock
    std::shared_ptr<IdleSource> idle;                  ///< null: cannot tell; the user counts as active
    std::shared_ptr<PowerSource> power;                ///< null: no battery
    std::function<uint64_t()> residentBytes;           ///< null: the memory cap cannot be enforced
    std::function<std::chrono::nanoseconds()> cpuTime; ///< null: charge busy time x cores instead
    int cores = 0;                                     ///< cores this process may use; 0: its affinity mask
    std::chrono::milliseconds pollInterval{1000};      ///< how often the idle and power sources are read
    /// Length of one run-and-rest cycle under a CPU cap; 0: rest after every microbatch.
    std::chrono::milliseconds dutyPeriod{1000};
};

/// The real world: system clock, logind or X idle, /sys/class/power_supply, /proc RSS
/// and process CPU time.
GovernorEnvironment systemEnvironment();

enum class GovernorState { Running, Throttled, Paused, Stopped };
std::string_view stateName(GovernorState state); ///< "running", "throttled", "paused", "stopped"

/// Which rule holds the work while the state is Paused (the first that applies, in
/// this order); None otherwise.
enum class HoldReason { None, PausedByUser, Snoozed, OnBattery, OutsideSchedule, WaitingForIdle };

/// The limits in force right now.
struct EffectiveLimits
{
    int cores = 1;
    int cpuPercent = 100;
    int64_t uploadBytesPerSecond = 0; ///< 0 = unlimited
    int64_t downloadBytesPerSecond = 0;
    bool operator==(const EffectiveLimits &) const = default;
};

/// The governor explains itself: a state, a reason ("paused: on battery (38%)") and the
/// limits in force.
struct GovernorStatus
{
    GovernorState state = GovernorState::Running;
    HoldReason hold = HoldReason::None;
    std::string reason;
    EffectiveLimits limits;
    bool userIdle = false;
    std::string idleSource; ///< empty: none, so the user counts as active
    bool onBattery = false;
    std::optional<int> batteryPercent;
    bool pausedByUser = false;
    int64_t snoozedUntilMs = 0; ///< Unix time in milliseconds; 0 when not snoozed
    int inFlight = 0;           ///< microbatches let through and not yet finished
};

/// The resource governor: a WorkGate that holds compute threads while work must not run
/// (paused, snoozed, on battery, outside the schedule, user active under
/// run-only-when-idle), spaces microbatches out to keep the process within its CPU-time
/// cap, and closes for good when resident memory crosses the cap. It also owns the
/// upload and download token buckets and the thread configuration for "at most N cores".
///
/// CPU cap: a ledger credited with cap x cores x wall time and debited with the
/// process's CPU time (all threads, BLAS helpers included); a thread may start a
/// microbatch when the ledger is not in debt. Without a CPU clock the debit is busy
/// time x cores, which is the classic duty cycle: after a microbatch busy for b the
/// next waits b(1-cap)/cap. Once in debt, work rests until it has earned the credit
/// for a whole dutyPeriod's run (cap x period), as BOINC throttles in one-second
/// periods: OpenBLAS's threads spin for about 0.1 s after each call, and a rest
/// after every microbatch would pay that spin out of the CPU budget every time.
///
/// Thread safety: every method may be called from any thread. Threads blocked in
/// enter() wake at once on pause/resume/snooze/setSettings/close, and at least every
/// pollInterval to re-read the idle and power sources. Destroy the governor only after
/// every thread has left enter().
class Governor final : public WorkGate
{
public:
    /// Called when the state or reason changes, on whichever thread made the governor
    /// look again: a compute thread in enter(), or a caller of pause(), resume(),
    /// snooze(), setSettings(), status() or close(). Never under the governor's lock, so
    /// it may call status(); keep it quick.
    using Observer = std::function<void(const GovernorStatus &)>;

    /// What tryEnter() decided: closed for good, admitted (wait == 0), or come back later.
    struct Admission
    {
        bool closed = false;
        std::chrono::nanoseconds wait{0};
    };

    /// Throws rookery::Error for invalid settings.
    explicit Governor(GovernorSettings settings = {}, GovernorEnvironment environment = systemEnvironment());
    ~Governor() override;
    Governor(const Governor &) = delete;
    Governor &operator=(const Governor &) = delete;

    bool enter() override;
    void leave(std::chrono::nanoseconds busy) override;
    /// The CPU-time cap in force (the limits of the user's current state, active or
    /// idle) as a share; the compute threads use all the cores allowed, so a stage's
    /// compute time over it is its time under the cap.
    double cpuShare() override;
    /// enter() without blocking. An admission (wait zero, not closed) must be matched by leave().
    Admission tryEnter();

    /// Validates, then applies from the next microbatch. On error throws rookery::Error
    /// naming the setting, and the previous settings stay in force.
    void setSettings(const GovernorSettings &settings);
    GovernorSettings settings() const;

    void pause();  ///< holds work until resume()
    void resume(); ///< ends a pause or a snooze
    /// Holds work for `duration`, then resumes by itself.
    void snooze(std::chrono::minutes duration);
    /// Closes the gate for good: enter() returns false from now on. `reason` is shown
    /// as the status reason.
    void close(const std::string &reason);

    GovernorStatus status();
    void setObserver(Observer observer);

    int cores();                 ///< cores allowed right now
    ThreadConfig threadConfig(); ///< how compute threads should use them (re-apply when it changes)
    /// Throws rookery::Error when the memory cap leaves no room for `bytes` more
    /// (estimated) on top of what the process holds now; `what` names the work.
    void checkFits(uint64_t bytes, const std::string &what);

    /// The transport draws its bytes from these; their rates follow the limits in force.
    TokenBucket &uploadLimiter() { return m_upload; }
    TokenBucket &downloadLimiter() { return m_download; }

private:
    using SteadyTime = std::chrono::steady_clock::time_point;

    Admission admitLocked();
    void evaluateLocked(SteadyTime now);
    void pollSourcesLocked(SteadyTime now);
    std::pair<HoldReason, std::string> holdReasonLocked();
    void applyLimitsLocked(const EffectiveLimits &limits);
    void chargeLedgerLocked(SteadyTime now);
    double resumeLevelLocked() const;
    bool memoryCrossedLocked();
    void closeLocked(const std::string &reason);
    void wakeAllLocked();
    void publish(std::unique_lock<std::mutex> &lock);

    GovernorEnvironment m_env;
    mutable std::mutex m_mutex;
    std::condition_variable m_wake;
    uint64_t m_wakeGeneration = 0;
    GovernorSettings m_settings;
    Schedule m_schedule;
    std::shared_ptr<Observer> m_observer;
    GovernorStatus m_status;
    bool m_statusChanged = false;

    bool m_closed = false;
    std::string m_closedReason;
    bool m_paused = false;
    std::optional<SteadyTime> m_snoozeUntil;
    std::chrono::system_clock::time_point m_snoozeUntilWall;

    SteadyTime m_nextPoll{};
    std::optional<std::chrono::milliseconds> m_idleTime;
    PowerState m_power;
    bool m_batteryHold = false;          // battery rule: holding since a battery spell
    std::optional<SteadyTime> m_acSince; // when AC came back during a battery hold

    double m_ledgerNs = 0;          // CPU-time credit in nanoseconds; negative = in debt
    bool m_heldSinceCharge = false; // a hold since the last charge: start the ledger afresh
    bool m_resting = false;         // in debt: rest until a whole period's run is earned
    bool m_freshLedger = true;      // next capped charge starts a cycle: bank one period's run
    SteadyTime m_ledgerAt{};
    std::chrono::nanoseconds m_lastCpu{0};
    std::chrono::nanoseconds m_unchargedBusy{0};

    TokenBucket m_upload;
    TokenBucket m_download;
};

} // namespace rookery::device
