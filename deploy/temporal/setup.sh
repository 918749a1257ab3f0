#!/bin/sh
# Prepares liftoff's namespace on a running Temporal: the namespace with its retention, and the search attributes
# liftoff's workflows set. docker-compose.yml runs it (service temporal-setup, image temporalio/admin-tools) once
# the server answers, on every `docker compose up`, so each step converges instead of failing when already done.
# The `temporal` CLI takes the server from TEMPORAL_ADDRESS (and TLS or an API key from the other TEMPORAL_*
# variables), so the same script prepares any cluster it can reach.
set -eu

namespace=${TEMPORAL_NAMESPACE:-default}
retention=${LIFTOFF_RETENTION:-30d}
# NAME=Type pairs separated by spaces; docker-compose.yml lists them, and a unit test holds that list to
# src/shared/constants.ts.
: "${LIFTOFF_SEARCH_ATTRIBUTES:?list the search attributes as NAME=Type pairs}"

# wait_until MESSAGE COMMAND...: runs COMMAND once a second until it succeeds; after 60 s, fails with MESSAGE.
wait_until() {
  message=$1
  shift
  attempts=0
  until "$@" >/dev/null 2>&1; do
    attempts=$((attempts + 1))
    if [ "$attempts" -ge 60 ]; then
      echo "$message after 60 s" >&2
      exit 1
    fi
    sleep 1
  done
}

wait_until "Temporal at ${TEMPORAL_ADDRESS:-127.0.0.1:7233} is not serving" temporal operator cluster health

if temporal operator namespace describe --namespace "$namespace" >/dev/null 2>&1; then
  existed=yes
else
  existed=no
  temporal operator namespace create --namespace "$namespace" --retention "$retention"
fi
# `describe` reads the database, but most calls go through the frontend's namespace cache, which learns of a new
# namespace only when it refreshes (about 10 s): wait for a call that uses it.
wait_until "namespace $namespace exists but is not served" \
  temporal operator search-attribute list --namespace "$namespace"
if [ "$existed" = yes ]; then
  temporal operator namespace update --namespace "$namespace" --retention "$retention"
fi

set --
for pair in $LIFTOFF_SEARCH_ATTRIBUTES; do
  set -- "$@" --name "${pair%%=*}" --type "${pair#*=}"
done
# Adding an attribute that exists with the same type is a no-op; with another type it fails, which is the drift
# this should stop on.
temporal operator search-attribute create --namespace "$namespace" "$@"
echo "namespace $namespace: retention $retention, search attributes $LIFTOFF_SEARCH_ATTRIBUTES"
