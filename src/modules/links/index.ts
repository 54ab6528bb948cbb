/** The links module's front door: payment links, the API's resource and the public link pages' payments. */
export { migrations } from './migrations/index.ts';
export {
  LINK_KINDS,
  LINK_LIMITS,
  LinkService,
  SLUG_PATTERN,
  unavailableMessage,
  type CreateLinkInput,
  type LinkAvailability,
  type LinkRow,
  type PatchLinkInput,
} from './service.ts';
