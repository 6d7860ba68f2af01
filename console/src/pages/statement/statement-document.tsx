import type { MonthlyStatementView } from "../../lib/api";
import { systemText } from "../../lib/system-text";
import { ChargeGroups } from "./charge-groups";
import { useStatementWords } from "./statement-i18n";
import { StatementCheckpoint, StatementSummary, StatementTopUps } from "./statement-sections";

/** The statement as one document: what a print shows, section by section. */
export function StatementDocument({ statement }: { statement: MonthlyStatementView }) {
  const { word, language } = useStatementWords();
  return (
    <article aria-label={word("title")} data-testid="statement">
      <StatementSummary statement={statement} />
      <StatementTopUps topUps={statement.topUps} />
      <ChargeGroups
        title={word("byModel")}
        label={word("model")}
        testId="statement-by-model"
        rows={statement.chargesByModel.map(({ model, ...group }) => ({
          ...group,
          // A member reads other members' requests as one line, which names none (C14).
          name: model ?? word("otherMembersKeys"),
        }))}
        total={statement.chargesWon}
        totalRequests={statement.chargeCount}
      />
      <ChargeGroups
        title={word("byKey")}
        label={word("key")}
        testId="statement-by-key"
        rows={statement.chargesByKey.map(({ keyId, keyName, ...group }) =>
          // A member reads other members' keys as one line, which names none (C14).
          keyId === null
            ? { ...group, name: word("otherMembersKeys") }
            : {
                ...group,
                name: keyName === null ? word("unnamedKey") : systemText(keyName, language),
                id: keyId,
              },
        )}
        total={statement.chargesWon}
        totalRequests={statement.chargeCount}
      />
      <StatementCheckpoint checkpoint={statement.checkpoint} generatedAt={statement.generatedAt} />
    </article>
  );
}
