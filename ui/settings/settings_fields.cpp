// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/settings/settings_fields.h"

#include <QCoreApplication>
#include <QLocale>

namespace rookery::ui {
namespace {

constexpr int kMaxKiBps = 10'000'000; // ~10 GB/s: beyond any volunteer's link, fits an int

QString tr(const char *text) { return QCoreApplication::translate("rookery::ui::SettingsFields", text); }

std::vector<SettingsField> makeFields()
{
    using K = SettingsField::Kind;
    using P = SettingsPage;
    // Defaults are courteous: half the CPU time while someone works at the machine,
    // modest bandwidth, all of it once the machine is idle. The engine's own defaults
    // take everything; a volunteer should not have to discover that.
    return {
        {"active.max-cores", K::Integer, P::Active, tr("Cores"), tr("How many cores Rookery may use while you work."),
         tr(" cores"), tr("All cores"), 0, 4096, "0"},
        {"active.cpu-percent",
         K::Integer,
         P::Active,
         tr("CPU time"),
         tr("Share of CPU time on those cores while you work."),
         tr(" %"),
         {},
         1,
         100,
         "50"},
        {"active.upload-kibps", K::Integer, P::Active, tr("Upload"), tr("Upload cap while you work."), tr(" KiB/s"),
         tr("Unlimited"), 0, kMaxKiBps, "1024"},
        {"active.download-kibps", K::Integer, P::Active, tr("Download"), tr("Download cap while you work."),
         tr(" KiB/s"), tr("Unlimited"), 0, kMaxKiBps, "4096"},
        {"idle.max-cores", K::Integer, P::Idle, tr("Cores"), tr("How many cores Rookery may use while you are away."),
         tr(" cores"), tr("All cores"), 0, 4096, "0"},
        {"idle.cpu-percent",
         K::Integer,
         P::Idle,
         tr("CPU time"),
         tr("Share of CPU time on those cores while you are away."),
         tr(" %"),
         {},
         1,
         100,
         "100"},
        {"idle.upload-kibps", K::Integer, P::Idle, tr("Upload"), tr("Upload cap while you are away."), tr(" KiB/s"),
         tr("Unlimited"), 0, kMaxKiBps, "0"},
        {"idle.download-kibps", K::Integer, P::Idle, tr("Download"), tr("Download cap while you are away."),
         tr(" KiB/s"), tr("Unlimited"), 0, kMaxKiBps, "0"},
        {"idle-minutes",
         K::Integer,
         P::Idle,
         tr("Idle after"),
         tr("Minutes without keyboard or mouse input before the machine counts as idle."),
         tr(" min"),
         {},
         1,
         24 * 60,
         "5"},
        {"run-only-when-idle",
         K::Switch,
         P::Rules,
         tr("Compute only while I am away"),
         tr("Hold all work while you use the computer."),
         {},
         {},
         0,
         0,
         "false"},
        {"pause-on-battery",
         K::Switch,
         P::Rules,
         tr("Pause on battery"),
         tr("Hold all work while the computer runs on battery."),
         {},
         {},
         0,
         0,
         "true"},
        {"battery-resume-seconds", K::Integer, P::Rules, tr("Resume on mains after"),
         tr("Seconds on mains power before work resumes after a battery spell."), tr(" s"), tr("At once"), 0, 24 * 3600,
         "60"},
        {"memory-cap-mib", K::Integer, P::Rules, tr("Memory cap"),
         tr("Largest resident memory Rookery may use; it pauses above it."), tr(" MiB"), tr("No cap"), 0, 1 << 30,
         "2048"},
        {"schedule",
         K::Text,
         P::Rules,
         tr("Schedule"),
         tr("When Rookery may compute, e.g. 'mon-fri 18:00-08:00, sat-sun all day'. Empty: any time."),
         {},
         {},
         0,
         0,
         ""},
    };
}

} // namespace

const std::vector<SettingsField> &settingsFields()
{
    static const std::vector<SettingsField> fields = makeFields();
    return fields;
}

const SettingsField *findSettingsField(const std::string &key)
{
    for (const auto &f : settingsFields())
        if (key == f.key)
            return &f;
    return nullptr;
}

std::map<std::string, std::string> defaultGovernorSettings()
{
    std::map<std::string, std::string> out;
    for (const auto &f : settingsFields())
        out.emplace(f.key, f.defaultValue);
    return out;
}

QString describeSettingValue(const SettingsField &field, const std::string &value)
{
    const QString text = QString::fromStdString(value);
    switch (field.kind) {
    case SettingsField::Kind::Switch:
        return value == "true" ? tr("on") : tr("off");
    case SettingsField::Kind::Text:
        return text.isEmpty() ? tr("any time") : text;
    case SettingsField::Kind::Integer:
        break;
    }
    bool ok = false;
    const qlonglong number = text.toLongLong(&ok);
    if (ok && number == 0 && !field.zeroText.isEmpty())
        return field.zeroText;
    return (ok ? QLocale().toString(number) : text) + field.unit;
}

} // namespace rookery::ui
