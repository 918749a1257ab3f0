// What the agreement checks expect of a cluster of DGX Sparks on 10.0.2.0/24, spark1 the head: the one spec
// side the agreement unit tests compare their hosts' facts against.
import type { AgreementExpectations } from '../../src/preflight/agreement.js';

/** `hosts` Sparks (spark1 at 10.0.2.11 the head, the rest workers), no interface variables; `over` wins. */
export function sparkExpectations(
  hosts: number,
  over: Partial<AgreementExpectations> = {},
): AgreementExpectations {
  return {
    image: 'vllm/vllm-openai:latest',
    modelPath: '/m',
    hosts: Array.from({ length: hosts }, (_, i) => ({
      name: `spark${i + 1}`,
      clusterIp: `10.0.2.${11 + i}`,
      role: i === 0 ? ('head' as const) : ('worker' as const),
    })),
    ifaceVars: [],
    vllmHostIps: [],
    rayPort: 6379,
    maxClockSkewMs: 5000,
    ...over,
  };
}
