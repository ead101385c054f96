// SPDX-License-Identifier: GPL-3.0-or-later
// Internal to engine/net: includes Boost.Asio SSL and OpenSSL.
#pragma once

#include <memory>
#include <string>

#include <boost/asio/ssl/context.hpp>
#include <boost/asio/ssl/verify_context.hpp>
#include <boost/system/error_code.hpp>

#include "engine/net/tls_credentials.h"

namespace rookery::net {

/// A TLS 1.3-only context with our certificate and the swarm CA as the only trust
/// anchor; AES-128-GCM preferred. Throws rookery::Error on bad credentials.
std::shared_ptr<boost::asio::ssl::context> makeTlsContext(const TlsCredentials &credentials, bool server);

/// OpenSSL's verify callback for one certificate of the chain under `check`. On refusal
/// sets `failure` to a sentence for the log ("certificate of ab12... expired on ..."),
/// and `outOfDate` when what failed first was the certificate's dates (expired, or not
/// yet valid): a holder renews, so trying again later may succeed.
bool verifyPeerCertificate(const PeerCheck &check, bool preverified, boost::asio::ssl::verify_context &ctx,
                           std::string &failure, bool *outOfDate = nullptr);

/// A handshake error that says the peer refused our certificate because of its dates
/// (TLS alert certificate_expired): we renew ours, so a later try may succeed.
bool isCertificateExpiredAlert(const boost::system::error_code &ec);

/// The node id (public key fingerprint) of the certificate the peer presented; "" if none.
std::string peerNodeId(SSL *ssl);

/// The negotiated cipher suite ("TLS_AES_128_GCM_SHA256").
std::string negotiatedCipher(SSL *ssl);

/// True for TLS errors that retrying will not cure: the peer refused our certificate.
bool isCertificateRefusal(const boost::system::error_code &ec);

/// A sentence for a failed TLS handshake; names the likely cause for a plaintext peer.
std::string describeTlsError(const boost::system::error_code &ec);

} // namespace rookery::net
