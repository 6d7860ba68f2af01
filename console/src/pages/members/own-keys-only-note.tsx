import { useI18n } from "../../lib/i18n";
import { useOrganizationAccess } from "./use-organization-access";

/**
 * On the organization's activity or usage of a member who may not read other members' (C14): the gateway
 * answers with the requests of the keys they issued alone, and the page says so rather than let a total
 * read as the organization's.
 */
export function OwnKeysOnlyNote(props: { hasOrganization: boolean; isOrganization: boolean }) {
  const { t } = useI18n();
  const access = useOrganizationAccess(props.hasOrganization);
  if (!props.isOrganization || !access.members.data || access.may("read-members-activity")) return null;
  return (
    <p className="muted" data-testid="own-keys-only">
      {t("ownKeysOnly")}
    </p>
  );
}
