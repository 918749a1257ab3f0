// The failure converter used when LIFTOFF_PAYLOAD_KEY is set: failure messages and stack traces (which carry log
// tails from hosts) go into the failure's encodedAttributes payload, which the payload codec then encrypts.
// CommonJS, because the SDK require()s this file by path in the worker and the client (the CLI's tsx hook only
// covers import), and webpack bundles the same file into the workflow sandbox.
'use strict';
const { DefaultFailureConverter } = require('@temporalio/common');

exports.failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
