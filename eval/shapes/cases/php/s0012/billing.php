<?php

function handle_billing(PDO $db): void
{
    $param = $_POST['v'] ?? '';
    $bar = '';
    $bar = $param;
    $bar = 'fixed_value';
    $sql = "SELECT * FROM users WHERE name = '" . $bar . "'";
    $rows = $db->query($sql);
}
