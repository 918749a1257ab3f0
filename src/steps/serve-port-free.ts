// Between "verify Ray" and "launch": nothing may listen on serve.port on the head. Preflight runs while the old
// server still holds the port, so only now, with the old services and containers gone and Ray up, can a holder be
// told from what the deploy removes: a process started outside the listed units, or a Ray port the spec reused
// (the dashboard's 8265, say). Left to the launch, it surfaces as a bind error deep in the server's log; here it is
// one line naming the field. Pure.
import { ApplicationFailure } from '@temporalio/common';
import { FailureType } from '../shared/failures.js';
import { listenerCommand } from '../host-commands/multiproc.js';
import { answerOf } from '../host-commands/step-command.js';
import type { HostStep } from './host-step.js';
import { listenerOf } from '../parsers/host-output.js';

export const servePortFree: HostStep = {
  name: 'checkServePort',
  patch: 'check-serve-port',
  on: 'head',
  after: 'verifyRayCluster',
  skippedFor: (spec) =>
    spec.serve.backend === 'multiproc' ? 'multiproc: rank 0 reads its ports as it starts' : undefined,
  commands: ({ spec }) => [{ name: 'listener', command: listenerCommand(spec.serve.port), check: true }],
  judge: (answers, { spec, host }) => {
    const held = listenerOf(answerOf(answers, 'listener').stdout);
    if (held === undefined) return `${host.name}: port ${spec.serve.port} free`;
    throw ApplicationFailure.create({
      type: FailureType.servePortInUse,
      message: `serve.port ${spec.serve.port} is in use on the head ${host.name} (${held}) with the old services and containers gone; vllm serve could not listen there. Stop what listens on it, or pick another serve.port.`,
      nonRetryable: true,
      details: [{ host: host.name, port: spec.serve.port, listener: held }],
    });
  },
  intent: ({ spec }) => [`nothing listens on serve.port ${spec.serve.port}, so vllm serve can`],
  timeoutMs: 10_000,
};
