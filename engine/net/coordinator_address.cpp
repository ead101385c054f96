// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/coordinator_address.h"

#include <cctype>
#include <charconv>

#include "engine/common/error.h"

namespace rookery::net {
namespace {

// Accepts upper or lower case, with or without colons between bytes (as openssl x509
// -fingerprint prints it); returns lowercase digits or "" when not a SHA-256.
std::string normalizeFingerprint(std::string_view text)
{
    std::string out;
    for (char c : text) {
        if (c == ':')
            continue;
        if (!std::isxdigit(static_cast<unsigned char>(c)))
            return {};
        out += char(std::tolower(static_cast<unsigned char>(c)));
    }
    return out.size() == 64 ? out : std::string();
}

} // namespace

bool validInvite(std::string_view token)
{
    if (token.size() < 16 || token.size() > 128)
        return false;
    for (char c : token)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_')
            return false;
    return true;
}

CoordinatorAddress CoordinatorAddress::parse(std::string_view text)
{
    const std::string quoted = "coordinator address '" + std::string(text) + "'";
    auto bad = [&](const std::string &why) { return Error(quoted + ": " + why); };
    constexpr std::string_view scheme = "wss://";
    if (text.substr(0, scheme.size()) != scheme)
        throw bad("must start with wss://");
    std::string_view rest = text.substr(scheme.size());
    const size_t hash = rest.find('#');
    if (hash == std::string_view::npos)
        throw bad("has no #sha256=<fingerprint> of the coordinator's certificate");
    std::string_view fragment = rest.substr(hash + 1);
    rest = rest.substr(0, hash);

    CoordinatorAddress a;
    constexpr std::string_view invite = "&invite=";
    if (const size_t at = fragment.find(invite); at != std::string_view::npos) {
        a.invite = std::string(fragment.substr(at + invite.size()));
        fragment = fragment.substr(0, at);
        if (!validInvite(a.invite))
            throw bad("the invite after &invite= must be 16 to 128 letters, digits, '-' or '_'");
    }
    constexpr std::string_view pin = "sha256=";
    if (fragment.substr(0, pin.size()) != pin)
        throw bad("the part after # must be sha256=<fingerprint>");
    a.sha256 = normalizeFingerprint(fragment.substr(pin.size()));
    if (a.sha256.empty())
        throw bad("the fingerprint must be 64 hexadecimal digits (a SHA-256)");

    const size_t slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos)
        a.path = std::string(rest.substr(slash));
    std::string_view port;
    if (!authority.empty() && authority.front() == '[') {
        const size_t close = authority.find(']');
        if (close == std::string_view::npos)
            throw bad("an IPv6 address needs a closing ]");
        a.host = std::string(authority.substr(1, close - 1));
        std::string_view after = authority.substr(close + 1);
        if (!after.empty() && after.front() != ':')
            throw bad("unexpected text after the IPv6 address");
        port = after.empty() ? after : after.substr(1);
    } else {
        const size_t colon = authority.rfind(':');
        a.host = std::string(authority.substr(0, colon));
        port = colon == std::string_view::npos ? std::string_view() : authority.substr(colon + 1);
    }
    if (a.host.empty())
        throw bad("has no host");
    if (a.host.find_first_of("@ ") != std::string::npos)
        throw bad("the host must not contain '@' or spaces");
    if (!port.empty() || (authority.find(':') != std::string_view::npos && authority.front() != '[')) {
        unsigned value = 0;
        const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
        if (ec != std::errc() || end != port.data() + port.size() || value == 0 || value > 65535)
            throw bad("the port must be a number from 1 to 65535");
        a.port = uint16_t(value);
    }
    return a;
}

std::string CoordinatorAddress::toString() const
{
    const bool v6 = host.find(':') != std::string::npos;
    return "wss://" + (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port) + path + "#sha256=" + sha256 +
           (invite.empty() ? "" : "&invite=" + invite);
}

} // namespace rookery::net
