// SPDX-License-Identifier: GPL-3.0-or-later
#include "engine/net/tls_context.h"

#include <boost/asio/ssl/error.hpp>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "engine/common/error.h"
#include "engine/net/openssl_util.h"

namespace rookery::net {
namespace ssl = boost::asio::ssl;

std::shared_ptr<ssl::context> makeTlsContext(const TlsCredentials &c, bool server)
{
    auto ctx = std::make_shared<ssl::context>(server ? ssl::context::tls_server : ssl::context::tls_client);
    SSL_CTX *native = ctx->native_handle();
    // TLS 1.3 only: every peer runs our software, and 1.3 has no weak suites to disable.
    SSL_CTX_set_min_proto_version(native, TLS1_3_VERSION);
    if (SSL_CTX_set_ciphersuites(native, "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:"
                                         "TLS_CHACHA20_POLY1305_SHA256") != 1)
        ossl::fail("cannot set the TLS cipher suites");
    SSL_CTX_set_options(native, SSL_OP_CIPHER_SERVER_PREFERENCE | SSL_OP_NO_RENEGOTIATION);
    boost::system::error_code ec;
    if (!c.certificatePem.empty()) {
        ctx->use_certificate_chain(boost::asio::buffer(c.certificatePem), ec);
        if (ec)
            throw Error("cannot use the TLS certificate: " + ec.message());
        ctx->use_private_key(boost::asio::buffer(c.privateKeyPem), ssl::context::pem, ec);
        if (ec)
            throw Error("cannot use the TLS private key: " + ec.message());
        if (SSL_CTX_check_private_key(native) != 1)
            throw Error("the TLS certificate does not belong to the private key");
    }
    if (!c.caCertificatePem.empty()) {
        ctx->add_certificate_authority(boost::asio::buffer(c.caCertificatePem), ec);
        if (ec)
            throw Error("cannot use the swarm CA certificate: " + ec.message());
    }
    return ctx;
}

namespace {

std::string shortId(const std::string &id) { return id.size() > 16 ? id.substr(0, 16) + "..." : id; }

std::string describeVerifyError(int err, X509 *cert)
{
    const std::string who = "the certificate of '" + shortId(ossl::commonName(cert)) + "'";
    switch (err) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
        return who + " expired on " + ossl::timeText(X509_get0_notAfter(cert));
    case X509_V_ERR_CERT_NOT_YET_VALID:
        return who + " is not valid until " + ossl::timeText(X509_get0_notBefore(cert));
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
        return who + " is not issued by this swarm's CA";
    default:
        return who + " failed verification: " + X509_verify_cert_error_string(err);
    }
}

bool isTimeError(int err) { return err == X509_V_ERR_CERT_HAS_EXPIRED || err == X509_V_ERR_CERT_NOT_YET_VALID; }

} // namespace

bool verifyPeerCertificate(const PeerCheck &check, bool preverified, ssl::verify_context &vctx, std::string &failure,
                           bool *outOfDate)
{
    X509_STORE_CTX *ctx = vctx.native_handle();
    X509 *cert = X509_STORE_CTX_get_current_cert(ctx);
    const int depth = X509_STORE_CTX_get_error_depth(ctx);
    const int err = X509_STORE_CTX_get_error(ctx);
    if (!cert) {
        failure = "the peer presented no certificate";
        return false;
    }
    auto refuse = [&](std::string why) {
        if (failure.empty()) {
            failure = std::move(why);
            if (outOfDate)
                *outOfDate = !preverified && isTimeError(err);
        }
        return false;
    };
    if (check.kind != PeerCheck::Kind::SwarmCa) {
        // Pinned or any: the chain is not what decides, but dates still count.
        if (!preverified && isTimeError(err))
            return refuse(describeVerifyError(err, cert));
        if (depth == 0 && check.kind == PeerCheck::Kind::PinnedCertificate) {
            // The pin names the public key (SPKI), so that a renewed certificate for the
            // same key keeps it; a pin of the whole certificate (older join strings) also
            // holds while that certificate does.
            if (!ossl::matchesPin(cert, check.sha256))
                return refuse("the certificate's key sha256=" + ossl::keyFingerprint(X509_get0_pubkey(cert)) +
                              " is not the pinned sha256=" + check.sha256);
        }
    } else {
        if (!preverified)
            return refuse(describeVerifyError(err, cert));
        if (depth == 0) {
            const std::string id = ossl::keyFingerprint(X509_get0_pubkey(cert));
            if (ossl::commonName(cert) != id)
                return refuse("the certificate's name '" + shortId(ossl::commonName(cert)) +
                              "' is not the fingerprint of its key");
        }
    }
    if (depth == 0 && !check.expectedNodeId.empty()) {
        const std::string id = ossl::keyFingerprint(X509_get0_pubkey(cert));
        if (id != check.expectedNodeId)
            return refuse("the peer is node " + shortId(id) + ", not the expected " + shortId(check.expectedNodeId));
    }
    return true;
}

std::string peerNodeId(SSL *ssl)
{
    X509 *cert = SSL_get0_peer_certificate(ssl);
    return cert ? ossl::keyFingerprint(X509_get0_pubkey(cert)) : std::string();
}

std::string negotiatedCipher(SSL *ssl)
{
    const SSL_CIPHER *c = SSL_get_current_cipher(ssl);
    return c ? SSL_CIPHER_get_name(c) : "none";
}

bool isCertificateRefusal(const boost::system::error_code &ec)
{
    if (ec.category() != boost::asio::error::get_ssl_category())
        return false;
    switch (ERR_GET_REASON(static_cast<unsigned long>(ec.value()))) {
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
    case SSL_R_SSLV3_ALERT_BAD_CERTIFICATE:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_REVOKED:
    case SSL_R_SSLV3_ALERT_CERTIFICATE_UNKNOWN:
    case SSL_R_SSLV3_ALERT_UNSUPPORTED_CERTIFICATE:
    case SSL_R_TLSV1_ALERT_UNKNOWN_CA:
    case SSL_R_TLSV1_ALERT_ACCESS_DENIED:
    case SSL_R_TLSV13_ALERT_CERTIFICATE_REQUIRED:
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
        return true;
    default:
        return false;
    }
}

bool isCertificateExpiredAlert(const boost::system::error_code &ec)
{
    return ec.category() == boost::asio::error::get_ssl_category() &&
           ERR_GET_REASON(static_cast<unsigned long>(ec.value())) == SSL_R_SSLV3_ALERT_CERTIFICATE_EXPIRED;
}

std::string describeTlsError(const boost::system::error_code &ec)
{
    std::string text = ec.message();
    if (ec.category() == boost::asio::error::get_ssl_category()) {
        const int reason = ERR_GET_REASON(static_cast<unsigned long>(ec.value()));
        if (reason == SSL_R_HTTP_REQUEST || reason == SSL_R_WRONG_VERSION_NUMBER ||
            reason == SSL_R_UNSUPPORTED_PROTOCOL || reason == SSL_R_PACKET_LENGTH_TOO_LONG)
            text += " (the peer does not speak TLS 1.3: a plaintext client?)";
        if (isCertificateRefusal(ec) && reason != SSL_R_CERTIFICATE_VERIFY_FAILED)
            text += " (the peer refused our certificate)";
    }
    return text;
}

} // namespace rookery::net
