import { useRef, useState } from "react";
import { KeyLimitsDialog } from "../../components/key-limits";
import { ErrorMessage } from "../../components/ui";
import { useI18n } from "../../lib/i18n";
import { useOrganizationAccess } from "../members/use-organization-access";
import { IssueOwnKeyCard, NewKeyCard } from "./issue-own-key-card";
import { KeyActionConfirm } from "./key-action-confirm";
import { KeyDefaultsCard } from "./key-defaults-card";
import { KeyScopeChoice } from "./key-scope-choice";
import { KeysTable } from "./keys-table";
import { type PendingKeyAction, useKeys } from "./use-keys";

export function KeysPage({ hasOrganization }: { hasOrganization: boolean }) {
  const { t } = useI18n();
  const keys = useKeys();
  const [pending, setPending] = useState<PendingKeyAction | null>(null);
  // A deleted key's row goes with the button that had focus: focus moves to the page's heading instead.
  const heading = useRef<HTMLHeadingElement>(null);
  const rows = keys.list.data?.data;
  // A personal key's limits are its owner's; an organization key's, its owners' and admins' (C14).
  const access = useOrganizationAccess(hasOrganization);
  const maySetLimits = !keys.isOrganization || access.may("set-key-limits");
  return (
    <>
      <h1 ref={heading} tabIndex={-1}>
        {t("navKeys")}
      </h1>
      <KeyScopeChoice
        isOrganization={keys.isOrganization}
        hasOrganization={hasOrganization}
        onChange={keys.setIsOrganization}
      />
      {keys.isOrganization && (
        <KeyDefaultsCard
          maySet={access.members.data ? access.may("set-key-defaults") : undefined}
          models={keys.models.data}
          modelsError={keys.models.error}
        />
      )}
      <IssueOwnKeyCard
        issuing={keys.issue.isPending}
        error={keys.issue.error}
        onIssue={(fields) => keys.issue.mutateAsync({ ...fields, isOrganization: keys.isOrganization })}
      />
      {/* Keyed by the secret: a new key's card starts uncopied. */}
      {keys.issued && (
        <NewKeyCard key={keys.issued.key} issued={keys.issued} onDone={() => keys.setIssued(null)} />
      )}
      <ErrorMessage error={keys.list.error ?? keys.change.error} />
      {rows && rows.length === 0 && <p>{t("noKeys")}</p>}
      {rows && rows.length > 0 && (
        <KeysTable
          keys={rows}
          onSetLimits={maySetLimits ? keys.limitsEditor.open : undefined}
          onAction={setPending}
        />
      )}
      {rows && rows.length > 0 && !maySetLimits && <p className="muted">{t("limitsOwnersOnly")}</p>}
      <KeyActionConfirm
        pending={pending}
        onCancel={() => setPending(null)}
        onConfirm={() => {
          if (pending) {
            keys.change.mutate(pending, {
              onSuccess: () => {
                if (pending.action === "delete") heading.current?.focus();
              },
            });
          }
          setPending(null);
        }}
      />
      <KeyLimitsDialog {...keys.limitsEditor.dialogProps} />
    </>
  );
}
