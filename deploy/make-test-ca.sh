#!/usr/bin/env bash
# Makes a test CA and one certificate per named host for `petra node` / `petra train` over TLS.
# For tests and trials only: the CA key sits unencrypted next to the certificates.
#
#   deploy/make-test-ca.sh DIR NAME [NAME...]
#
# Writes DIR/ca.pem and DIR/ca.key (kept if present), then DIR/NAME.pem and DIR/NAME.key for each
# NAME (kept if present and signed by DIR/ca.pem). Each certificate is valid for server and client
# use (a node accepts, a coordinator connects; CAF checks both) with subjectAltNames NAME (DNS, or IP
# when NAME is an address), localhost and 127.0.0.1. Idempotent: a second run changes nothing.
# Keys are EC P-256, mode 600. Use the CA on every host: --tls-ca DIR/ca.pem, tls.ca: DIR/ca.pem.
set -euo pipefail

if [ $# -lt 2 ]; then
  echo "usage: $0 DIR NAME [NAME...]   (e.g. $0 certs coordinator node1 node2)" >&2
  exit 2
fi
command -v openssl >/dev/null || { echo "make-test-ca: openssl is missing (apt-get install openssl)" >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir"
umask 077
days=825

if [ ! -s "$dir/ca.pem" ] || [ ! -s "$dir/ca.key" ]; then
  openssl req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \
    -keyout "$dir/ca.key" -out "$dir/ca.pem" -days "$days" -subj "/CN=petra test CA" \
    -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
  chmod 644 "$dir/ca.pem"
  echo "make-test-ca: wrote $dir/ca.pem"
fi

for name in "$@"; do
  case "$name" in
    */* | "" | .*) echo "make-test-ca: '$name' is not a host name" >&2; exit 2 ;;
  esac
  cert="$dir/$name.pem"
  key="$dir/$name.key"
  if [ -s "$cert" ] && [ -s "$key" ] && openssl verify -CAfile "$dir/ca.pem" "$cert" >/dev/null 2>&1; then
    continue
  fi
  if [[ "$name" =~ ^[0-9.]+$ || "$name" == *:* ]]; then san="IP:$name"; else san="DNS:$name"; fi
  [ "$name" = localhost ] || san="$san,DNS:localhost"
  [ "$name" = 127.0.0.1 ] || san="$san,IP:127.0.0.1"
  ext=$(mktemp)
  trap 'rm -f "$ext" "$dir/$name.csr"' EXIT
  printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature,keyAgreement" \
    "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=$san" >"$ext"
  openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$key" \
    -out "$dir/$name.csr" -subj "/CN=$name" 2>/dev/null
  openssl x509 -req -in "$dir/$name.csr" -CA "$dir/ca.pem" -CAkey "$dir/ca.key" -CAcreateserial \
    -out "$cert" -days "$days" -extfile "$ext" 2>/dev/null
  rm -f "$ext" "$dir/$name.csr"
  trap - EXIT
  chmod 644 "$cert"
  echo "make-test-ca: wrote $cert ($san)"
done
