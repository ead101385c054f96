// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/openssl_util.h"

#include <fstream>
#include <sstream>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "engine/common/error.h"

namespace rookery::net::ossl {
namespace {

struct BioFree
{
    void operator()(BIO *b) const { BIO_free(b); }
};
using Bio = std::unique_ptr<BIO, BioFree>;

Bio memoryBio(std::string_view text)
{
    Bio b(BIO_new_mem_buf(text.data(), int(text.size())));
    if (!b)
        fail("cannot allocate a memory BIO");
    return b;
}

std::string bioText(BIO *b)
{
    char *data = nullptr;
    const long n = BIO_get_mem_data(b, &data);
    return std::string(data, size_t(n));
}

std::string hex(const unsigned char *p, size_t n)
{
    static const char digits[] = "0123456789abcdef";
    std::string s(n * 2, '0');
    for (size_t i = 0; i < n; ++i) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    return s;
}

std::string sha256Hex(const unsigned char *p, size_t n)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (!EVP_Digest(p, n, md, &len, EVP_sha256(), nullptr))
        fail("SHA-256 failed");
    return hex(md, len);
}

void addExtension(X509 *cert, X509 *issuer, int nid, const char *value)
{
    X509V3_CTX ctx;
    X509V3_set_ctx_nodb(&ctx);
    X509V3_set_ctx(&ctx, issuer ? issuer : cert, cert, nullptr, nullptr, 0);
    X509_EXTENSION *ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    if (!ext || !X509_add_ext(cert, ext, -1))
        fail(std::string("cannot add certificate extension ") + value);
    X509_EXTENSION_free(ext);
}

} // namespace

void fail(const std::string &context)
{
    std::string detail;
    while (const unsigned long e = ERR_get_error()) {
        char buf[256];
        ERR_error_string_n(e, buf, sizeof(buf));
        detail += (detail.empty() ? "" : "; ") + std::string(buf);
    }
    throw Error(context + (detail.empty() ? "" : ": " + detail));
}

Key generateEd25519()
{
    Key key(EVP_PKEY_Q_keygen(nullptr, nullptr, "ED25519"));
    if (!key)
        fail("cannot generate an Ed25519 key");
    return key;
}

Key privateKeyFromPem(std::string_view pem, const std::string &what)
{
    auto bio = memoryBio(pem);
    Key key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
    if (!key)
        fail(what + " is not a PEM private key");
    return key;
}

Key publicKeyFromPem(std::string_view pem, const std::string &what)
{
    auto bio = memoryBio(pem);
    Key key(PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr));
    if (!key)
        fail(what + " is not a PEM public key");
    return key;
}

Cert certificateFromPem(std::string_view pem, const std::string &what)
{
    auto bio = memoryBio(pem);
    Cert cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
    if (!cert)
        fail(what + " is not a PEM certificate");
    return cert;
}

std::string privateKeyPem(EVP_PKEY *key)
{
    Bio b(BIO_new(BIO_s_mem()));
    if (!b || !PEM_write_bio_PrivateKey(b.get(), key, nullptr, nullptr, 0, nullptr, nullptr))
        fail("cannot write a private key");
    return bioText(b.get());
}

std::string publicKeyPem(EVP_PKEY *key)
{
    Bio b(BIO_new(BIO_s_mem()));
    if (!b || !PEM_write_bio_PUBKEY(b.get(), key))
        fail("cannot write a public key");
    return bioText(b.get());
}

std::string certificatePem(X509 *cert)
{
    Bio b(BIO_new(BIO_s_mem()));
    if (!b || !PEM_write_bio_X509(b.get(), cert))
        fail("cannot write a certificate");
    return bioText(b.get());
}

std::string keyFingerprint(EVP_PKEY *key)
{
    unsigned char *der = nullptr;
    const int n = i2d_PUBKEY(key, &der);
    if (n <= 0)
        fail("cannot encode a public key");
    std::string fp = sha256Hex(der, size_t(n));
    OPENSSL_free(der);
    return fp;
}

std::string certFingerprint(X509 *cert)
{
    unsigned char *der = nullptr;
    const int n = i2d_X509(cert, &der);
    if (n <= 0)
        fail("cannot encode a certificate");
    std::string fp = sha256Hex(der, size_t(n));
    OPENSSL_free(der);
    return fp;
}

bool matchesPin(X509 *cert, const std::string &pin)
{
    return cert && (keyFingerprint(X509_get0_pubkey(cert)) == pin || certFingerprint(cert) == pin);
}

std::string commonName(X509 *cert)
{
    char buf[256] = {};
    if (X509_NAME_get_text_by_NID(X509_get_subject_name(cert), NID_commonName, buf, sizeof(buf)) < 0)
        return {};
    return buf;
}

std::string timeText(const ASN1_TIME *t)
{
    struct tm tm = {};
    if (!t || !ASN1_TIME_to_tm(t, &tm))
        return "?";
    char buf[64];
    std::strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S UTC", &tm);
    return buf;
}

Cert makeCertificate(EVP_PKEY *subjectKey, const std::string &cn, X509 *issuer, EVP_PKEY *issuerKey,
                     std::chrono::system_clock::time_point notBefore, std::chrono::system_clock::time_point notAfter,
                     bool isCa)
{
    Cert cert(X509_new());
    if (!cert)
        fail("cannot allocate a certificate");
    X509_set_version(cert.get(), 2); // v3
    unsigned char serial[16];
    RAND_bytes(serial, sizeof(serial));
    serial[0] &= 0x7f; // a positive INTEGER
    BIGNUM *bn = BN_bin2bn(serial, sizeof(serial), nullptr);
    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
    BN_free(bn);
    using std::chrono::system_clock;
    ASN1_TIME_set(X509_getm_notBefore(cert.get()), system_clock::to_time_t(notBefore));
    ASN1_TIME_set(X509_getm_notAfter(cert.get()), system_clock::to_time_t(notAfter));
    X509_NAME *name = X509_get_subject_name(cert.get());
    X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, reinterpret_cast<const unsigned char *>("Rookery"), -1, -1, 0);
    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, reinterpret_cast<const unsigned char *>(cn.c_str()), -1, -1,
                               0);
    X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
    if (!X509_set_pubkey(cert.get(), subjectKey))
        fail("cannot set a certificate's key");
    if (isCa) {
        addExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:TRUE");
        addExtension(cert.get(), issuer, NID_key_usage, "critical,keyCertSign,cRLSign");
    } else {
        addExtension(cert.get(), issuer, NID_basic_constraints, "critical,CA:FALSE");
        addExtension(cert.get(), issuer, NID_key_usage, "critical,digitalSignature");
        addExtension(cert.get(), issuer, NID_ext_key_usage, "serverAuth,clientAuth");
    }
    addExtension(cert.get(), issuer, NID_subject_key_identifier, "hash");
    if (issuer)
        addExtension(cert.get(), issuer, NID_authority_key_identifier, "keyid:always");
    // Ed25519 signs the message itself: no separate digest.
    if (!X509_sign(cert.get(), issuerKey, nullptr))
        fail("cannot sign a certificate for " + cn);
    return cert;
}

std::string readFile(const std::filesystem::path &path)
{
    std::ifstream in(path, std::ios::binary);
    if (!in)
        throw Error("cannot read " + path.string());
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
}

} // namespace rookery::net::ossl
