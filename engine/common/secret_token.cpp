// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/common/secret_token.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "engine/common/error.h"
#include "engine/common/paths.h"

namespace rookery {

std::string newToken()
{
    unsigned char bytes[32];
    if (RAND_bytes(bytes, sizeof bytes) != 1)
        throw Error("cannot make a token: the random number generator failed");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string token;
    for (const unsigned char b : bytes) {
        token += kHex[b >> 4];
        token += kHex[b & 15];
    }
    return token;
}

std::string readToken(const std::filesystem::path &file)
{
    const std::string text = readPrivateFile(file);
    const auto first = text.find_first_not_of(" \t\r\n");
    if (first == std::string::npos)
        throw Error(file.string() + " holds no token");
    const auto last = text.find_last_not_of(" \t\r\n");
    return text.substr(first, last - first + 1);
}

std::string sha256Hex(std::string_view text)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(text.data(), text.size(), md, &len, EVP_sha256(), nullptr))
        throw Error("SHA-256 failed (OpenSSL)");
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < len; ++i) {
        out += kHex[md[i] >> 4];
        out += kHex[md[i] & 15];
    }
    return out;
}

bool sameToken(std::string_view a, std::string_view b)
{
    return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

} // namespace rookery
