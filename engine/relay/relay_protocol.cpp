// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/relay/relay_protocol.h"

#include <algorithm>

#include <openssl/rand.h>

#include "engine/common/error.h"

namespace rookery::relay {

Token tokenFromBytes(std::string_view bytes)
{
    Token token{};
    if (bytes.size() != token.size())
        throw Error("a relay token has " + std::to_string(token.size()) + " bytes, not " +
                    std::to_string(bytes.size()));
    std::copy(bytes.begin(), bytes.end(), token.begin());
    return token;
}

std::string tokenToBytes(const Token &token) { return std::string(token.begin(), token.end()); }

Token randomToken()
{
    Token t{};
    if (RAND_bytes(t.data(), int(t.size())) != 1)
        throw Error("cannot make a relay token: the system's random number generator failed");
    return t;
}

std::string relayPreamble(const Token &token) { return net::relayPreamble(tokenToBytes(token)); }

} // namespace rookery::relay
