// Env names that must not carry a secret reference. A secret's value reaches the GPU host's shell environment
// (envTransport exports it there before `docker run`/`docker exec`, so docker can complete `-e NAME`), and
// these names steer that shell or the docker CLI: a spec could point docker at another daemon, preload a
// library, or change what `docker` means. `__proto__` is refused as any env name: as a key it is the
// prototype of the object that holds the env.
const hostSteering = /^(PATH|HOME|IFS|ENV|BASH_ENV|SHELL|LD_[A-Za-z0-9_]*|DOCKER_[A-Za-z0-9_]*)$/;

/** Why `name` may not be a secret reference's variable or the name of an env entry holding one; else undefined. */
export function hostSteeringEnvProblem(name: string): string | undefined {
  if (!hostSteering.test(name)) return undefined;
  return (
    `${name} steers the GPU host's shell or docker CLI, and a secret reference's value is exported in that ` +
    'shell: name the variable something else (PATH, HOME, IFS, ENV, BASH_ENV, SHELL, LD_* and DOCKER_* are refused)'
  );
}

/** Why `name` may not be an env name at all; else undefined. */
export function reservedEnvNameProblem(name: string): string | undefined {
  return name === '__proto__' ? '"__proto__" is not allowed as an environment variable name' : undefined;
}
