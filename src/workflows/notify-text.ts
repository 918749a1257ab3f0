// The `text` of each notification, as Slack reads it: every part escaped (& < >), and what came from a host or a
// server (a failure's message, a probe's error, the reason of a degraded cluster) in a code span, so a server's
// error body cannot ping a channel, disguise a link or load an image. Pure: the deploy and the supervisor call it.
import { slackEscape, slackHostText } from '../shared/host-markup.js';

export const notifyText = {
  deployFailed: (cluster: string, message: string): string =>
    `✖ deploy of ${slackEscape(cluster)} failed: ${slackHostText(message)}`,
  deploySucceeded: (cluster: string, model: string, endpoint: string): string =>
    `✔ ${slackEscape(cluster)} is serving ${slackEscape(model)} at ${slackEscape(endpoint)}`,
  lost: (cluster: string, cause: string): string =>
    `✖ ${slackEscape(cluster)} is lost: ${slackHostText(cause)}`,
  relaunched: (cluster: string, n: number, cause: string): string =>
    `↻ relaunching ${slackEscape(cluster)} (#${n}): ${slackHostText(cause)}`,
  recovered: (cluster: string, launchId: string): string =>
    `✔ ${slackEscape(cluster)} is serving again (${slackEscape(launchId)})`,
  degraded: (cluster: string, reason: string): string =>
    `✖ ${slackEscape(cluster)} is degraded: ${slackHostText(reason)}`,
};
