// Values the deploy derives from the spec. Pure: used by the schema's checks and by the workflow. Takes only
// the fields it reads, not the DeploySpec type: the schema imports this module, so it cannot import the schema.

const hfCacheInContainer = '/root/.cache/huggingface';

/** The parts of a spec that say where the model weights are. */
export interface ModelLocation {
  serve: { model: string; modelPath?: string | undefined };
  ray: { volumes: readonly string[] };
}

/** Host folder of the model weights: serve.modelPath, or the Hugging Face cache of a mounted volume. */
export function modelPathFor(spec: ModelLocation): string | undefined {
  if (spec.serve.modelPath) return spec.serve.modelPath;
  for (const volume of spec.ray.volumes) {
    const [hostPath, containerPath] = volume.split(':');
    if (hostPath && containerPath?.replace(/\/+$/, '') === hfCacheInContainer) {
      return `${hostPath.replace(/\/+$/, '')}/hub/models--${spec.serve.model.split('/').join('--')}`;
    }
  }
  return undefined;
}

export function dirnameOf(path: string): string {
  const i = path.lastIndexOf('/');
  return i <= 0 ? '/' : path.slice(0, i);
}
