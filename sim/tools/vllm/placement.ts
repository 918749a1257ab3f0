// The Ray side of `vllm serve`: join the cluster as the driver and wait for a placement group of one GPU per
// tensor-parallel rank, failing with vLLM's own messages when Ray is missing or short of GPUs.
import {
  connectToGcs,
  gcsUnreachableLines,
  type GcsChannel,
  NO_RUNNING_RAY_MESSAGE,
  resolveGcsAddress,
  type ServerMessage,
} from '../ray/protocol.js';
import { FatalExit, frames, print, traceback, vllmLine } from './log.js';

export type RayChannel = GcsChannel;
export type PlacementGroupReady = Extract<ServerMessage, { type: 'placementGroupReady' }>;

export interface PlacementRequest {
  dir: string | undefined;
  /** Bundles wanted: one GPU for each tensor-parallel rank. */
  tp: number;
  driverIp: string;
  memoryMiB: number;
}

/** `onConnected` gets the channel as soon as there is one, so whoever ends the process can close it. */
export async function joinPlacementGroup(
  request: PlacementRequest,
  onConnected: (ray: RayChannel) => void,
): Promise<{ ray: RayChannel; ready: PlacementGroupReady }> {
  const source = resolveGcsAddress(undefined, request.dir);
  if (source.kind !== 'explicit' && source.kind !== 'local') {
    throw new FatalExit(traceback([frames.engineCore, frames.initRay], NO_RUNNING_RAY_MESSAGE));
  }
  const ray = await connectToGcs(source.addr);
  if (!ray) {
    throw new FatalExit([
      ...gcsUnreachableLines(source.addr),
      ...traceback([frames.engineCore, frames.initRay], NO_RUNNING_RAY_MESSAGE),
    ]);
  }
  onConnected(ray);
  ray.startHeartbeat();
  const windowSeconds = Number(process.env.SIM_VLLM_PG_WAIT_S ?? '5');
  const ready = await new Promise<PlacementGroupReady | FatalExit>((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    ray.onMessage((msg) => {
      if (msg.type === 'placementGroupReady') {
        clearTimeout(timer);
        resolve(msg);
      } else if (msg.type === 'placementGroupPending' && !timer) {
        print(
          vllmLine(
            'INFO',
            'ray_utils.py:243',
            `Waiting for creating a placement group of specs for 60 seconds. specs=${msg.specs}. Check \`ray status\` and \`ray list nodes\` to see if you have enough resources, and make sure the IP addresses used by ray cluster are the same as VLLM_HOST_IP environment variable specified in each node if you are running on a multi-node.`,
          ),
        );
        timer = setTimeout(
          () => resolve(placementGroupTimeout(request.tp, msg.totalGpus, msg.specs)),
          windowSeconds * 1000,
        );
      }
    });
    ray.onClose(() => {
      clearTimeout(timer);
      resolve(new FatalExit(traceback([frames.engineCore, frames.initRay], NO_RUNNING_RAY_MESSAGE)));
    });
    ray.send({
      type: 'requestPlacementGroup',
      bundles: request.tp,
      driverIp: request.driverIp,
      memoryMiB: request.memoryMiB,
    });
  });
  if (ready instanceof FatalExit) throw ready;
  return { ray, ready };
}

function placementGroupTimeout(tp: number, totalGpus: number, specs: string): FatalExit {
  if (totalGpus < tp) {
    return new FatalExit(
      traceback(
        [frames.engineCore, frames.checkGpus],
        'ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.',
      ),
    );
  }
  return new FatalExit(
    traceback(
      [frames.engineCore, frames.waitPg],
      `ValueError: Cannot provide a placement group of placement_group_specs=${specs} within 1800 seconds. See \`ray status\` and \`ray list nodes\` to make sure the cluster has enough resources.`,
    ),
  );
}
