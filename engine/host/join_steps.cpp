// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/host/join_steps.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>

namespace rookery::host {
namespace {

std::string lower(std::string text)
{
    std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return text;
}

bool mentions(const std::string &text, std::initializer_list<const char *> words)
{
    return std::any_of(words.begin(), words.end(), [&](const char *w) { return text.find(w) != std::string::npos; });
}

JoinStepView connectStep(const participant::JoinState &s, const std::string &where)
{
    if (s.connected)
        return {"connect", "done", "connected to the coordinator at " + where};
    if (s.connectProblem.empty())
        return {"connect", "working", "connecting to the coordinator at " + where + "…"};
    return {"connect", "failed",
            plainConnectProblem(s.connectProblem, where) +
                (s.gaveUp ? " Joining has stopped; start again with a corrected join string." : " Retrying…")};
}

JoinStepView registerStep(const participant::JoinState &s)
{
    if (s.registered)
        return {"register", "done", "the coordinator accepted this computer"};
    if (!s.registerProblem.empty())
        return {"register", "failed", "the coordinator refused this computer: " + s.registerProblem};
    if (s.connected)
        return {"register", "working", "registering with the coordinator…"};
    return {"register", "pending", "after connecting"};
}

JoinStepView reachStep(const participant::JoinState &s, const ReachVerdict &r)
{
    if (!s.registered && r.reachability.empty())
        return {"reach", "pending", "after registering"};
    const std::string why = r.note.empty() ? std::string() : " (" + r.note + ")";
    if (r.reachability == "direct")
        return {"reach", "done", "other volunteers can connect to this computer directly" + why};
    if (r.reachability == "unreachable")
        return {"reach", "relayed",
                "not directly: other volunteers cannot connect to this computer" + why +
                    ". It connects to them instead, and a link to one who cannot be reached either goes through a "
                    "relay, encrypted end to end"};
    return {"reach", "working", "the coordinator is checking whether other volunteers can connect to this computer…"};
}

JoinStepView assignStep(const participant::JoinState &s)
{
    if (!s.placement.empty())
        return {"assign", "done", s.placement};
    if (!s.registered)
        return {"assign", "pending", "after registering"};
    return {"assign", "working", s.waiting.empty() ? std::string("waiting for a place in the swarm…") : s.waiting};
}

} // namespace

std::vector<JoinStepView> joinSteps(const participant::JoinState &state, const ReachVerdict &reach,
                                    const std::string &where)
{
    return {connectStep(state, where), registerStep(state), reachStep(state, reach), assignStep(state)};
}

std::string plainConnectProblem(const std::string &reason, const std::string &where)
{
    const std::string r = lower(reason);
    if (mentions(r, {"fingerprint", "pinned", "certificate verify", "bad certificate"}))
        return "the coordinator at " + where +
               " did not show the certificate the join string pins: copy the whole join string again, or ask the "
               "swarm's operator for a new one.";
    if (mentions(r, {"connection refused"}))
        return "nothing answers at " + where +
               " (connection refused): the coordinator is not running there, or the port is wrong.";
    if (mentions(r, {"timed out", "timeout"}))
        return "no answer from " + where + " (timed out): check the address, and that no firewall blocks the port.";
    if (mentions(r, {"host not found", "resolve", "name or service", "no address"}))
        return "cannot find " + where + ": check the host name in the join string and this computer's connection.";
    if (mentions(r, {"network is unreachable", "no route"}))
        return "no route to " + where + ": is this computer online?";
    if (mentions(r, {"version"}))
        return "the coordinator at " + where + " speaks another protocol version: update Rookery. (" + reason + ")";
    return "cannot connect to the coordinator at " + where + ": " + reason + ".";
}

} // namespace rookery::host
