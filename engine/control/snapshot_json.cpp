// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/control/snapshot_json.h"

#include <nlohmann/json.hpp>

#include "engine/common/error.h"

namespace rookery::host {

// nlohmann finds these by argument-dependent lookup, so they live in the types' namespace.
NLOHMANN_JSON_SERIALIZE_ENUM(PeerLinkView::Kind,
                             {{PeerLinkView::Kind::Pipeline, "pipeline"}, {PeerLinkView::Kind::Ring, "ring"}})
NLOHMANN_JSON_SERIALIZE_ENUM(EngineEvent::Level, {{EngineEvent::Level::Debug, "debug"},
                                                  {EngineEvent::Level::Info, "info"},
                                                  {EngineEvent::Level::Warning, "warning"},
                                                  {EngineEvent::Level::Error, "error"}})

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(DeviceView, measured, cpuModel, physicalCores, logicalCores,
                                                ramTotalBytes, ramAvailableBytes, gflopsOneThread, gflopsAllThreads,
                                                memoryBandwidthGBs, diskFreeBytes, gpus, measuredAtMs)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(AssignmentView, mode, swarm, cluster, clusterCount, stage, stageCount,
                                                role, layers, model, job, modelLayers, modelParameters, stageParameters,
                                                stageMemoryBytes, reachability, reachabilityNote)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(GovernorView, state, reason, pausedByUser, snoozedUntilMs, cpuPercent,
                                                cores)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(TrainingView, step, totalSteps, loss, samplesPerSecond, testAccuracy,
                                                etaSeconds, staleness, ringRounds, ringSkipped)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ContributionView, samplesToday, samplesTotal, computeHoursToday,
                                                computeHoursTotal)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PeerView, id, name, cluster, stage, state, samplesPerSecond, self)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PeerLinkView, from, to, kind)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(CheckpointView, id, run, step, createdAtMs, model, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(JoinStepView, step, state, text)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EngineSnapshot, sequence, consentGiven, running, device, assignment,
                                                governor, training, contribution, peers, links, join, checkpoints,
                                                lastError)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(EngineEvent, timeMs, level, area, message)

} // namespace rookery::host

namespace rookery::control {
namespace {

nlohmann::json parse(const std::string &text, const char *what)
{
    try {
        return nlohmann::json::parse(text);
    } catch (const nlohmann::json::exception &e) {
        throw Error(std::string("not a ") + what + " document: " + e.what());
    }
}

template <typename T> T convert(const nlohmann::json &json, const char *what)
{
    try {
        return json.get<T>();
    } catch (const nlohmann::json::exception &e) {
        throw Error(std::string("not a ") + what + " document: " + e.what());
    }
}

} // namespace

std::string toJson(const host::EngineSnapshot &snapshot) { return nlohmann::json(snapshot).dump(); }

host::EngineSnapshot snapshotFromJson(const std::string &json)
{
    const auto j = parse(json, "snapshot");
    if (!j.is_object())
        throw Error("not a snapshot document: not a JSON object");
    return convert<host::EngineSnapshot>(j, "snapshot");
}

std::string toJson(const EventPage &page)
{
    return nlohmann::json{{"next", page.next}, {"events", page.events}}.dump();
}

EventPage eventPageFromJson(const std::string &json)
{
    const auto j = parse(json, "event page");
    if (!j.is_object() || !j.contains("next") || !j.contains("events"))
        throw Error("not an event page: 'next' and 'events' are needed");
    EventPage page;
    page.next = convert<int64_t>(j["next"], "event page");
    page.events = convert<std::vector<host::EngineEvent>>(j["events"], "event page");
    return page;
}

std::string toJson(const std::map<std::string, std::string> &values) { return nlohmann::json(values).dump(); }

std::map<std::string, std::string> keyValuesFromJson(const std::string &json)
{
    const auto j = parse(json, "settings");
    if (!j.is_object())
        throw Error("the settings must be a JSON object of keys and values");
    std::map<std::string, std::string> out;
    for (const auto &[key, value] : j.items()) {
        if (value.is_string())
            out[key] = value.get<std::string>();
        else if (value.is_boolean())
            out[key] = value.get<bool>() ? "true" : "false";
        else if (value.is_number_integer())
            out[key] = std::to_string(value.get<int64_t>());
        else if (value.is_number())
            out[key] = value.dump();
        else
            throw Error("setting '" + key + "': a string, number or true/false is needed");
    }
    return out;
}

} // namespace rookery::control
