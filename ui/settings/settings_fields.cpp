// SPDX-License-Identifier: GPL-3.0-or-later
#include "ui/settings/settings_fields.h"

#include <algorithm>
#include <limits>

#include <QCoreApplication>
#include <QLocale>

namespace rookery::ui {
namespace {

QString tr(const char *text) { return QCoreApplication::translate("rookery::ui::SettingsFields", text); }

int clampToInt(int64_t v)
{
    return int(std::clamp<int64_t>(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

/// A row of the app's table: where the setting lives and how it looks. Its key, kind and
/// range are the engine's.
SettingsField presented(const device::GovernorSettingField::Member &member, SettingsPage page, QString label,
                        QString help, QString unit = {}, QString zeroText = {})
{
    const device::GovernorSettingField &setting = device::governorSettingField(member);
    return {&setting,
            page,
            std::move(label),
            std::move(help),
            std::move(unit),
            std::move(zeroText),
            std::string(setting.key),
            setting.kind(),
            clampToInt(setting.min),
            clampToInt(setting.max),
            {}};
}

std::vector<SettingsField> makeFields()
{
    using device::Limits;
    using device::SettingMember;
    using S = device::GovernorSettings;
    using P = SettingsPage;
    std::vector<SettingsField> fields{
        presented(SettingMember(&S::whenActive, &Limits::maxCores), P::Active, tr("Cores"),
                  tr("How many cores Rookery may use while you work."), tr(" cores"), tr("All cores")),
        presented(SettingMember(&S::whenActive, &Limits::cpuPercent), P::Active, tr("CPU time"),
                  tr("Share of CPU time on those cores while you work."), tr(" %")),
        presented(SettingMember(&S::whenActive, &Limits::uploadKiBps), P::Active, tr("Upload"),
                  tr("Upload cap while you work."), tr(" KiB/s"), tr("Unlimited")),
        presented(SettingMember(&S::whenActive, &Limits::downloadKiBps), P::Active, tr("Download"),
                  tr("Download cap while you work."), tr(" KiB/s"), tr("Unlimited")),
        presented(SettingMember(&S::whenIdle, &Limits::maxCores), P::Idle, tr("Cores"),
                  tr("How many cores Rookery may use while you are away."), tr(" cores"), tr("All cores")),
        presented(SettingMember(&S::whenIdle, &Limits::cpuPercent), P::Idle, tr("CPU time"),
                  tr("Share of CPU time on those cores while you are away."), tr(" %")),
        presented(SettingMember(&S::whenIdle, &Limits::uploadKiBps), P::Idle, tr("Upload"),
                  tr("Upload cap while you are away."), tr(" KiB/s"), tr("Unlimited")),
        presented(SettingMember(&S::whenIdle, &Limits::downloadKiBps), P::Idle, tr("Download"),
                  tr("Download cap while you are away."), tr(" KiB/s"), tr("Unlimited")),
        presented(SettingMember(&S::idleMinutes), P::Idle, tr("Idle after"),
                  tr("Minutes without keyboard or mouse input before the machine counts as idle."), tr(" min")),
        presented(SettingMember(&S::runOnlyWhenIdle), P::Rules, tr("Compute only while I am away"),
                  tr("Hold all work while you use the computer.")),
        presented(SettingMember(&S::pauseOnBattery), P::Rules, tr("Pause on battery"),
                  tr("Hold all work while the computer runs on battery.")),
        presented(SettingMember(&S::batteryResumeSeconds), P::Rules, tr("Resume on mains after"),
                  tr("Seconds on mains power before work resumes after a battery spell."), tr(" s"), tr("At once")),
        presented(SettingMember(&S::memoryCapMiB), P::Rules, tr("Memory cap"),
                  tr("Largest resident memory Rookery may use; it pauses above it."), tr(" MiB"), tr("No cap")),
        presented(SettingMember(&S::schedule), P::Rules, tr("Schedule"),
                  tr("When Rookery may compute, e.g. 'mon-fri 18:00-08:00, sat-sun all day'. Empty: any time.")),
    };
    const auto defaults = defaultGovernorSettings();
    for (auto &f : fields)
        f.defaultValue = defaults.at(f.key);
    return fields;
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
    return device::toKeyValues(device::volunteerGovernorSettings());
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
